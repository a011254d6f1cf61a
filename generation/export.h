// --export FILE: a checkpoint's model written for other programs, in the format FILE's
// extension names: .gguf, llama.cpp's (format/gguf.h), or .onnx, ONNX runtimes' (format/onnx.h).
// docs/formats.md says what each carries and how to run it.
#ifndef CHARGPT_EXPORT_H
#define CHARGPT_EXPORT_H

#include <stddef.h>

#include "../format/checkpoint.h"

typedef enum { EXPORT_GGUF, EXPORT_ONNX } ExportFormat;

// The format path's extension names (.gguf or .onnx, in any case): 0, or -1 with err.
int export_format(const char *path, ExportFormat *format, char err[ERR_LEN]);
// Whether path's format carries a model of config c: 0, or -1 with err naming path and why not.
int export_check(const char *path, const GPTConfig *c, char err[ERR_LEN]);
// The memory writing path takes besides the model (0 for a path of neither format).
double export_memory(const char *path, const GPTConfig *c);
// The name the files give the model: "chargpt run <train.run_id> step <state.step>", or
// "chargpt <the checkpoint's file name>" for one without a run id.
void export_model_name(const Checkpoint *ck, char *name, size_t n);
// Writes model to path in its format (export_check passed): over a file there when replace
// is 1, else only while nothing is there. Returns 0 with `written` saying in a line what was
// written; ATOMIC_FILE_EXISTS or -1 with err (nothing is left at path).
int export_model(const char *path, const GPT *model, const Vocab *vocab, const char *name, int replace,
                 char written[ERR_LEN], char err[ERR_LEN]);

// What --export reads from the checkpoint before it is closed, and the memory it needs.
typedef struct {
    char name[256];           // the model's name in the files (export_model_name)
    int has_optimizer;        // the checkpoint holds AdamW's moments
    double checkpoint_bytes;  // the checkpoint's size
    double parameters;        // the model's parameters' bytes
} ExportPlan;

#endif
