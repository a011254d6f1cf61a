// The forward's hooks (model/gpt.h: a head's output or the residual stream replaced) against
// the double-precision reference's, and the measures built on them (analysis/patching.h:
// activation patching, the heads' means and mean ablation) against the reference and
// tests/fixtures/analysis.safetensors.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/gpt.h"
#include "analysis_fixture.h"
#include "reference.h"
#include "test.h"

// The fixture's parameters as doubles, for the reference.
static double *fixture_params(const AnalysisFixture *f) {
    double *p = malloc(f->model.num_parameters * sizeof(double));
    if (CHECK(p != NULL, "out of memory")) ref_to_double(p, f->model.params_memory, f->model.num_parameters);
    return p;
}

// Hooks of every kind change the float forward as they change the reference's: a head's
// output replaced position by position and another's by one row (a mean), the residual
// stream replaced at one position entering a block and at every position entering ln_f.
TEST(hooks_against_reference) {
    AnalysisFixture f;
    if (analysis_fixture_load(&f) != 0) return;
    GPT *m = &f.model;
    const GPTConfig *c = &m->config;
    const int t = c->block_size, C = c->n_embd, hs = c->head_size, V = c->vocab_size, L = c->n_layer;
    const int *tokens = analysis_tokens(&f, "attribution.tokens", t);
    double *params = fixture_params(&f), *want = malloc((size_t)t * V * sizeof(double));
    float *rows = malloc((size_t)t * C * sizeof(float));
    if (tokens && params && CHECK(want && rows, "out of memory")) {
        fill_uniform(rows, (size_t)t * C, 5);
        HeadHook heads[2] = {{1, 0, rows, hs}, {0, 1, rows + 3, 0}};
        ResidualHook residuals[2] = {{1, 3, rows, C}, {L, -1, rows + 1, 0}};
        for (int kind = 0; kind < 3; kind++) {  // heads, residuals, both
            ForwardHooks hooks = {heads, kind != 1 ? 2 : 0, residuals, kind != 0 ? 1 + (kind == 1) : 0};
            m->hooks = &hooks;
            gpt_forward(m, tokens, NULL, 1, t, NULL);
            ref_gpt_forward_backward(m, params, tokens, tokens, 1, t, 0, 0, want, NULL, NULL);
            m->hooks = NULL;
            double e = rel_error_fd(m->acts.logits, want, (size_t)t * V);
            CHECK(e < 1e-4, "hooks of kind %d: logits rel error %.2e against the reference", kind, e);
        }
        // the residual stream entering ln_f replaced by one row at every position: every position's
        // logits are the same
        ForwardHooks last = {NULL, 0, residuals + 1, 1};
        m->hooks = &last;
        gpt_forward(m, tokens, NULL, 1, t, NULL);
        m->hooks = NULL;
        CHECK(memcmp(m->acts.logits, m->acts.logits + (size_t)(t - 1) * V, (size_t)V * sizeof(float)) == 0,
              "the same residual row at every position gave different logits");
    }
    free(params), free(want), free(rows);
    analysis_fixture_free(&f);
}
