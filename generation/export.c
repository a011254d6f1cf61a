#include "export.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../common/platform.h"
#include "../format/atomic_file.h"
#include "../format/gguf.h"
#include "../format/onnx.h"
#include "job.h"

int export_format(const char *path, ExportFormat *format, char err[ERR_LEN]) {
    const char *ext = platform_path_extension(path);
    if (strcasecmp(ext, "gguf") == 0) *format = EXPORT_GGUF;
    else if (strcasecmp(ext, "onnx") == 0) *format = EXPORT_ONNX;
    else {
        snprintf(err, ERR_LEN, "--export %s: unknown model format (name a .gguf file for llama.cpp or a .onnx file "
                 "for ONNX runtimes)", path);
        return -1;
    }
    return 0;
}

int export_check(const char *path, const GPTConfig *c, char err[ERR_LEN]) {
    ExportFormat format;
    if (export_format(path, &format, err) != 0) return -1;
    char why[ERR_LEN];
    int rc = format == EXPORT_GGUF ? gguf_check_config(c, why) : onnx_check_config(c, why);
    if (rc != 0) snprintf(err, ERR_LEN, "--export %s: the model cannot be written as %s: %s", path,
                          format == EXPORT_GGUF ? "GGUF" : "ONNX", why);
    return rc;
}

double export_memory(const char *path, const GPTConfig *c) {
    char err[ERR_LEN];
    ExportFormat format;
    if (export_format(path, &format, err) != 0) return 0.0;
    return format == EXPORT_GGUF ? gguf_export_memory(c) : onnx_export_memory(c);
}

void export_model_name(const Checkpoint *ck, char *name, size_t n) {
    const char *run_id = checkpoint_meta(ck, "train.run_id"), *step = checkpoint_meta(ck, "state.step");
    if (run_id) {
        snprintf(name, n, "chargpt run %s step %s", run_id, step ? step : "?");
        return;
    }
    const char *base = platform_path_last_separator(ck->path);
    snprintf(name, n, "chargpt %s", base ? base + 1 : ck->path);
}

int export_model(const char *path, const GPT *model, const Vocab *vocab, const char *name, int replace,
                 char written[ERR_LEN], char err[ERR_LEN]) {
    ExportFormat format;
    if (export_format(path, &format, err) != 0) return -1;
    const GPTConfig *c = &model->config;
    char size[32];
    if (format == EXPORT_GGUF) {
        GgufSummary s;
        int rc = gguf_export(path, model, vocab, name, replace, &s, err);
        if (rc != 0) return rc;
        format_bytes(s.bytes, size, sizeof(size));
        snprintf(written, ERR_LEN, "%s: GGUF version %d, llama.cpp architecture %s, %d tokens of one character "
                 "(tokenizer rwkv), F32, %s%s", path, GGUF_VERSION, s.architecture, vocab->size, size,
                 s.zero_qkv_bias ? "; c_attn's bias written as zeros (the model has none, llama.cpp needs one)" : "");
        return 0;
    }
    OnnxSummary s;
    int rc = onnx_export(path, model, vocab, name, replace, &s, err);
    if (rc != 0) return rc;
    format_bytes(s.bytes, size, sizeof(size));
    snprintf(written, ERR_LEN, "%s: ONNX IR version %d, opset %d, input_ids [batch, sequence <= %d] -> logits [batch, "
             "sequence, %d], F32, %s", path, ONNX_IR_VERSION, ONNX_OPSET, c->block_size, c->vocab_size, size);
    return 0;
}

// ----------------------------------------------------------------------------
// ./generate --export FILE: the job's stages (generation/job.h)

int plan_exports(const Job *j, ExportPlan *plan, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const GPTConfig *c = &j->ck.config;
    char why[ERR_LEN];
    for (int i = 0; i < o->num_exports; i++)
        if (export_check(o->exports[i], c, why) != 0) return error_status(err, EXIT_DATA, "%s: %s", o->checkpoint, why);
    // the parameters, the checkpoint they are read from, and the largest file's own lists
    GPTMemoryPlan memory;
    gpt_memory_plan(c, 1, GPT_PLAN_FORWARD, &memory);
    plan->parameters = memory.parameters;
    plan->checkpoint_bytes = (double)j->ck.file.file_len;
    double file_bytes = 0.0;
    for (int i = 0; i < o->num_exports; i++) file_bytes = fmax(file_bytes, export_memory(o->exports[i], c));
    const char *source;
    double limit = j->memory_limit(o, &source), need = plan->parameters + plan->checkpoint_bytes + file_bytes;
    if (limit > 0 && need > limit) {
        char text[4][32];
        double parts[4] = {need, plan->parameters, plan->checkpoint_bytes, limit};
        for (int i = 0; i < 4; i++) format_bytes(parts[i], text[i], sizeof(text[i]));
        return error_status(err, EXIT_USAGE, "%s: exporting the model needs %s (its parameters %s beside the "
                            "checkpoint's %s), more than the %s %s", o->checkpoint, text[0], text[1], text[2], text[3],
                            source);
    }
    export_model_name(&j->ck, plan->name, sizeof(plan->name));
    plan->has_optimizer = j->ck.has_optimizer;
    return 0;
}

int write_exports(const Job *j, const ExportPlan *plan, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    char written[ERR_LEN];
    for (int i = 0; i < o->num_exports; i++) {
        int rc = export_model(o->exports[i], &j->model, &j->vocab, plan->name, o->force, written, err);
        if (rc != 0) return rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA;
        printf("%s\n", written);
    }
    char size[32], params[32];
    format_bytes(plan->checkpoint_bytes, size, sizeof(size));
    format_bytes(plan->parameters, params, sizeof(params));
    printf("from %s: %s, its parameters %s%s\n", o->checkpoint, size, params,
           plan->has_optimizer ? " (the rest: AdamW's moments and the header)" : "");
    return j->flush_stdout(err) != 0 ? EXIT_DATA : 0;
}
