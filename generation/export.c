#include "export.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../common/platform.h"
#include "../format/gguf.h"
#include "../format/onnx.h"

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
