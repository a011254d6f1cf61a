// tests/fixtures/analysis.safetensors (scripts/make_analysis_reference.py): the model its
// metadata describes, with its weights, and its tensors by name.
#ifndef CHARGPT_ANALYSIS_FIXTURE_H
#define CHARGPT_ANALYSIS_FIXTURE_H

#include <stdint.h>

#include "../format/safetensors.h"
#include "../model/gpt.h"

#define ANALYSIS_FIXTURE "tests/fixtures/analysis.safetensors"

typedef struct {
    SafeTensors st;
    GPT model;  // activations for ANALYSIS_FIXTURE_ROWS sequences
} AnalysisFixture;
#define ANALYSIS_FIXTURE_ROWS 3

// Reads the fixture and builds its model. Returns 0, or -1 after recording a failure.
int analysis_fixture_load(AnalysisFixture *f);
void analysis_fixture_free(AnalysisFixture *f);
// The F32 tensor `name` of the shape given, or NULL after recording a failure.
const float *analysis_tensor(const AnalysisFixture *f, const char *name, int ndim, const int64_t *shape);
// The I32 tensor `name` of n values, each a token of the model's vocabulary, or NULL after
// recording a failure.
const int *analysis_tokens(const AnalysisFixture *f, const char *name, int n);

#endif
