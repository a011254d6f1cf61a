#include "analysis_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define ANALYSIS_FORMAT "chargpt-analysis-1"

// A small integer of the metadata, or -1 after recording a failure.
static int meta_int(const AnalysisFixture *f, const char *key) {
    const char *s = safetensors_meta(&f->st, key);
    char *end = NULL;
    long v = s ? strtol(s, &end, 10) : -1;
    if (!CHECK(s && end != s && *end == '\0' && v >= 0 && v <= 100000, "%s: metadata \"%s\" is %s", ANALYSIS_FIXTURE,
               key, s ? s : "missing"))
        return -1;
    return (int)v;
}

// The tensor `name` of the dtype and shape given, or NULL after recording a failure.
static const void *tensor_of(const AnalysisFixture *f, const char *name, StDtype dtype, int ndim, const int64_t *shape) {
    const StTensor *t = safetensors_find(&f->st, name);
    int same = t && t->dtype == dtype && t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (!CHECK(same, "%s: no %s tensor \"%s\" of %d dimensions [%lld, ...]", ANALYSIS_FIXTURE,
               dtype == ST_F32 ? "F32" : "I32", name, ndim, (long long)shape[0]))
        return NULL;
    return safetensors_tensor_data(&f->st, t);
}

const float *analysis_tensor(const AnalysisFixture *f, const char *name, int ndim, const int64_t *shape) {
    return tensor_of(f, name, ST_F32, ndim, shape);
}

const int *analysis_tokens(const AnalysisFixture *f, const char *name, int n) {
    const int *tokens = tensor_of(f, name, ST_I32, 1, (int64_t[]){n});
    for (int i = 0; tokens && i < n; i++)
        if (!CHECK(tokens[i] >= 0 && tokens[i] < f->model.config.vocab_size, "%s: %s[%d] = %d is not a token",
                   ANALYSIS_FIXTURE, name, i, tokens[i]))
            return NULL;
    return tokens;
}

int analysis_fixture_load(AnalysisFixture *f) {
    memset(f, 0, sizeof(*f));
    char err[ERR_LEN];
    if (!CHECK(safetensors_read(ANALYSIS_FIXTURE, &f->st, err) == 0, "cannot read the committed fixture (run the "
               "tests from the repository root; remake it with scripts/make_analysis_reference.py): %s", err))
        return -1;
    const char *format = safetensors_meta(&f->st, "format");
    GPTConfig c = {0};
    if (!CHECK(format && strcmp(format, ANALYSIS_FORMAT) == 0, "%s: format %s", ANALYSIS_FIXTURE,
               format ? format : "missing") ||
        (c.vocab_size = meta_int(f, "vocab_size")) < 0 || (c.block_size = meta_int(f, "block_size")) < 0 ||
        (c.n_layer = meta_int(f, "n_layer")) < 0 || (c.n_head = meta_int(f, "n_head")) < 0 ||
        (c.n_embd = meta_int(f, "n_embd")) < 0 || (c.head_size = meta_int(f, "head_size")) < 0 ||
        (c.qkv_bias = meta_int(f, "qkv_bias")) < 0 ||
        !CHECK(gpt_build(&f->model, &c, 0, err) == 0 && gpt_alloc_activations(&f->model, ANALYSIS_FIXTURE_ROWS, err) == 0,
               "%s: %s", ANALYSIS_FIXTURE, err)) {
        analysis_fixture_free(f);
        return -1;
    }
    int count = gpt_num_tensors(&c);
    for (int i = 0; i < count; i++) {
        TensorInfo info;
        gpt_tensor_info(&c, i, &info);
        const float *w = analysis_tensor(f, info.name, info.ndim, (int64_t[]){info.shape[0], info.shape[1]});
        if (!w) {
            analysis_fixture_free(f);
            return -1;
        }
        memcpy(f->model.params_memory + info.offset, w, info.size * sizeof(float));
    }
    return 0;
}

void analysis_fixture_free(AnalysisFixture *f) {
    gpt_free(&f->model);
    safetensors_free(&f->st);
}
