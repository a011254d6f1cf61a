// The measures built on the forward's hooks (model/gpt.h; tests/test_model.c checks the hooks
// themselves against the double reference's): activation patching, the heads' means and
// ablation by the mean (analysis/patching.h, analysis/head_means.h), against the reference with
// the same hooks and tests/fixtures/analysis.safetensors; and ./generate's --patch,
// --ablate-mean and --circuits.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/head_means.h"
#include "../analysis/patching.h"
#include "../format/checkpoint.h"
#include "../format/json.h"
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

// The largest |a[i] - b[i]|, NaN if any is (so that a check of it fails): a loop of statements, which aarch64 gcc 12's vectoriser compiles (a
// reduction through fmax of doubles against floats stopped it with an internal compiler error)
static double largest_difference(const double *a, const float *b, int n) {
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= worst)) worst = d;
    }
    return worst;
}

// Each head's output, and the stream at each position, patched: against TransformerLens's
// patching written out in torch
TEST(patching_against_torch) {
    AnalysisFixture f;
    if (analysis_fixture_load(&f) != 0) return;
    const GPTConfig *c = &f.model.config;
    const int t = c->block_size, L = c->n_layer, H = c->n_head;
    const int *clean = analysis_tokens(&f, "patching.clean", t), *corrupted = analysis_tokens(&f, "patching.corrupted", t);
    const int *answers = analysis_tokens(&f, "patching.answers", 2);
    const float *metric = analysis_tensor(&f, "patching.metric", 1, (int64_t[]){2});
    const float *heads = analysis_tensor(&f, "patching.heads", 2, (int64_t[]){L, H});
    const float *residual = analysis_tensor(&f, "patching.residual", 2, (int64_t[]){L + 1, t});
    Patching p;
    char err[ERR_LEN];
    if (clean && corrupted && answers && metric && heads && residual &&
        CHECK(patching_run(&p, &f.model, clean, corrupted, t, NULL, NULL, err) == 0, "%s", err)) {
        CHECK(p.answer_clean == answers[0] && p.answer_corrupted == answers[1], "answers %d %d, torch %d %d",
              p.answer_clean, p.answer_corrupted, answers[0], answers[1]);
        CHECK(fabs(p.metric_clean - metric[0]) < 1e-4 && fabs(p.metric_corrupted - metric[1]) < 1e-4,
              "metrics %.6f %.6f, torch %.6f %.6f", p.metric_clean, p.metric_corrupted, metric[0], metric[1]);
        double worst = largest_difference(p.heads, heads, L * H), stream = largest_difference(p.residual, residual, (L + 1) * t);
        if (!(stream <= worst)) worst = stream;
        printf("    patching against torch: shares within %.1e\n", worst);
        CHECK(worst < 1e-4, "a share differs from torch's by %.2e", worst);
        // the stream entering ln_f at the last position is all the last logits read: all of it back
        CHECK(p.residual[(size_t)L * t + t - 1] == 1.0, "the last stream at the last position restores %.17g, not 1",
              p.residual[(size_t)L * t + t - 1]);
        patching_free(&p);
    }
    analysis_fixture_free(&f);
}

// The metric of the corrupted run with one head's output taken from the clean run, through the
// double reference with the same hook: the shares patching_run found
TEST(patching_against_reference) {
    AnalysisFixture f;
    if (analysis_fixture_load(&f) != 0) return;
    GPT *m = &f.model;
    const GPTConfig *c = &m->config;
    const int t = c->block_size, L = c->n_layer, H = c->n_head, hs = c->head_size, A = H * hs, V = c->vocab_size;
    const int *clean = analysis_tokens(&f, "patching.clean", t), *corrupted = analysis_tokens(&f, "patching.corrupted", t);
    double *params = fixture_params(&f), *logits = malloc((size_t)t * V * sizeof(double));
    float *outputs = malloc((size_t)L * t * A * sizeof(float));
    Patching p;
    char err[ERR_LEN];
    if (clean && corrupted && params && CHECK(logits && outputs, "out of memory") &&
        CHECK(patching_run(&p, m, clean, corrupted, t, NULL, NULL, err) == 0, "%s", err)) {
        gpt_forward(m, clean, NULL, 1, t, NULL);
        for (int l = 0; l < L; l++) memcpy(outputs + (size_t)l * t * A, gpt_attention_output(m, l), (size_t)t * A * sizeof(float));
        double metric[2];
        const int *texts[2] = {clean, corrupted};
        const double *last = logits + (size_t)(t - 1) * V;
        for (int k = 0; k < 2; k++) {
            ref_gpt_forward_backward(m, params, texts[k], texts[k], 1, t, 0, 0, logits, NULL, NULL);
            metric[k] = last[p.answer_clean] - last[p.answer_corrupted];
        }
        double worst = 0.0;
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++) {
                ActivationEdit edit = {.layer = l, .head = h, .rows = outputs + (size_t)l * t * A + h * hs, .ld = A};
                ForwardHooks hooks = {.heads = &edit, .n_heads = 1};
                m->hooks = &hooks;
                ref_gpt_forward_backward(m, params, corrupted, corrupted, 1, t, 0, 0, logits, NULL, NULL);
                m->hooks = NULL;
                double share = (last[p.answer_clean] - last[p.answer_corrupted] - metric[1]) / (metric[0] - metric[1]);
                worst = fmax(worst, fabs(share - p.heads[l * H + h]));
            }
        CHECK(worst < 1e-4, "a head's share differs from the reference's by %.2e", worst);
        patching_free(&p);
    }
    free(params), free(logits), free(outputs);
    analysis_fixture_free(&f);
}

// The clean run's whole residual stream entering block 0, patched into the corrupted run,
// makes the clean run: the same logits, bit for bit
TEST(patching_whole_clean_stream_restores_exactly) {
    AnalysisFixture f;
    if (analysis_fixture_load(&f) != 0) return;
    GPT *m = &f.model;
    const GPTConfig *c = &m->config;
    const int t = c->block_size, C = c->n_embd, V = c->vocab_size;
    const int *clean = analysis_tokens(&f, "patching.clean", t), *corrupted = analysis_tokens(&f, "patching.corrupted", t);
    float *stream = malloc((size_t)t * C * sizeof(float)), *logits = malloc((size_t)t * V * sizeof(float));
    if (clean && corrupted && CHECK(stream && logits, "out of memory")) {
        gpt_forward(m, clean, NULL, 1, t, NULL);
        memcpy(stream, gpt_residual_stream(m, 0), (size_t)t * C * sizeof(float));
        memcpy(logits, m->acts.logits, (size_t)t * V * sizeof(float));
        ActivationEdit edit = {.layer = 0, .rows = stream, .ld = C};
        ForwardHooks hooks = {.residual = &edit, .n_residual = 1};
        m->hooks = &hooks;
        gpt_forward(m, corrupted, NULL, 1, t, NULL);
        m->hooks = NULL;
        CHECK(memcmp(logits, m->acts.logits, (size_t)t * V * sizeof(float)) == 0,
              "the corrupted run with the clean stream gave other logits than the clean run");
    }
    free(stream), free(logits);
    analysis_fixture_free(&f);
}

// Two texts with the same answer have nothing to restore
TEST(patching_same_answer_refused) {
    AnalysisFixture f;
    if (analysis_fixture_load(&f) != 0) return;
    const int t = f.model.config.block_size;
    const int *clean = analysis_tokens(&f, "patching.clean", t);
    Patching p;
    char err[ERR_LEN] = "";
    if (clean) {
        CHECK(patching_run(&p, &f.model, clean, clean, t, NULL, NULL, err) == -2, "a text patched into itself ran");
        CHECK(strstr(err, "same character") != NULL, "message: %s", err);
    }
    analysis_fixture_free(&f);
}

// Every head's mean over the reference batch, and the loss with each replaced by it: against
// torch, and the loss against the double reference with the same hooks
TEST(mean_ablation_against_torch_and_reference) {
    AnalysisFixture f;
    if (analysis_fixture_load(&f) != 0) return;
    GPT *m = &f.model;
    const GPTConfig *c = &m->config;
    const int T = c->block_size, L = c->n_layer, H = c->n_head, hs = c->head_size;
    const int *reference = analysis_tokens(&f, "mean_ablation.reference", ANALYSIS_FIXTURE_ROWS * T);
    const int *tokens = analysis_tokens(&f, "attribution.tokens", T);
    const float *want_means = analysis_tensor(&f, "mean_ablation.means", 3, (int64_t[]){L, H, hs});
    const float *want_loss = analysis_tensor(&f, "mean_ablation.loss", 2, (int64_t[]){L, H});
    float *means = malloc((size_t)L * H * hs * sizeof(float));
    double *params = fixture_params(&f);
    char err[ERR_LEN];
    if (reference && tokens && want_means && want_loss && params && CHECK(means != NULL, "out of memory") &&
        CHECK(head_means(m, reference, (long)ANALYSIS_FIXTURE_ROWS * T, means, err) == 0, "%s", err)) {
        double e = rel_error_ff(means, want_means, (size_t)L * H * hs);
        CHECK(e < 1e-5, "means: rel error %.2e against torch", e);
        unsigned char flags[64] = {0};
        ActivationEdit edits[64];
        for (int i = 0; i < L * H; i++) {
            flags[i] = 1;
            ForwardHooks with = {.heads = edits, .n_heads = head_means_edits(c, means, flags, edits)};
            flags[i] = 0;
            m->hooks = &with;
            gpt_forward(m, tokens, tokens + 1, 1, T - 1, NULL);
            double want = ref_gpt_forward_backward(m, params, tokens, tokens + 1, 1, T - 1, 0, 0, NULL, NULL, NULL);
            m->hooks = NULL;
            CHECK(with.n_heads == 1 && edits[0].layer == i / H && edits[0].head == i % H && edits[0].ld == 0,
                  "head %d: the edit of its flag", i);
            CHECK(fabs(m->mean_loss - want_loss[i]) < 1e-4, "head %d.%d mean-ablated: loss %.6f, torch %.6f", i / H,
                  i % H, m->mean_loss, want_loss[i]);
            CHECK(fabs(m->mean_loss - want) < 1e-5, "head %d.%d mean-ablated: loss %.6f, the reference %.6f", i / H,
                  i % H, m->mean_loss, want);
        }
    }
    free(means), free(params);
    analysis_fixture_free(&f);
}

// ---------------------------------------------------------------------------------------
// ./generate's --patch, --ablate-mean and --circuits

#define CLI_DIR "tests/tmp/analysis_cli"

// The fixture's model saved as a checkpoint of the characters a..k (a model of one layer when
// one_layer: the fixture's first block alone) at path; 0, or -1 after a failure.
static int fixture_checkpoint(const char *path, int one_layer) {
    AnalysisFixture f;
    if (analysis_fixture_load(&f) != 0) return -1;
    uint32_t chars[11];
    for (int i = 0; i < 11; i++) chars[i] = 'a' + i;
    char err[ERR_LEN];
    GPT small, *m = &f.model;
    int rc = -1;
    if (one_layer) {
        GPTConfig c = f.model.config;
        c.n_layer = 1;
        if (!CHECK(gpt_build(&small, &c, 0, err) == 0, "%s", err)) goto done;
        gpt_init_weights(&small, 1);
        m = &small;
    }
    rc = checkpoint_save(path, m, &(Vocab){chars, 11, 0}, NULL, NULL, 0, err);
    CHECK(rc == 0, "checkpoint_save: %s", err);
    if (one_layer) gpt_free(&small);
done:
    analysis_fixture_free(&f);
    return rc;
}

// The JSON document at path, parsed; 0, or -1 after a failure.
static int read_json(const char *path, JsonDoc *doc, char **text) {
    size_t len;
    char err[ERR_LEN];
    *text = test_read_file(path, &len);
    if (!CHECK(*text != NULL, "%s not written", path)) return -1;
    if (!CHECK(json_parse(*text, len, len + 16, doc, err) == 0, "%s: %s", path, err)) {
        free(*text);
        return -1;
    }
    return 0;
}

// The numbers of an array [n] of numbers, summed; NAN after a failure.
static double sum_numbers(const JsonNode *a, int n) {
    if (!CHECK(a && a->type == JSON_ARRAY && (int)a->count == n, "not an array of %d", n)) return NAN;
    double s = 0.0;
    const JsonNode *x = json_first(a);
    for (int i = 0; i < n; i++, x = json_next(x)) s += json_number(x);
    return s;
}

TEST(generate_patch_and_its_json) {
    const char *ckpt = CLI_DIR "/model.safetensors", *json = CLI_DIR "/patch.json";
    if (!test_make_dir("tests/tmp") || !test_make_dir(CLI_DIR) || fixture_checkpoint(ckpt, 0) != 0) return;
    remove(json);
    // texts the fixture's model predicts differently after (the fixture's clean and corrupted)
    AnalysisFixture f;
    if (analysis_fixture_load(&f) != 0) return;
    const int t = f.model.config.block_size, L = f.model.config.n_layer, H = f.model.config.n_head;
    const int *clean = analysis_tokens(&f, "patching.clean", t), *corrupted = analysis_tokens(&f, "patching.corrupted", t);
    const float *heads = analysis_tensor(&f, "patching.heads", 2, (int64_t[]){L, H});
    char a[16] = "", b[16] = "";
    for (int i = 0; clean && corrupted && i < t; i++) a[i] = (char)('a' + clean[i]), b[i] = (char)('a' + corrupted[i]);
    TestRun r = test_run_program("generate", NULL, CLI_DIR "/out.txt", 60,
                                 (const char *[]){ckpt, "--patch", a, b, "--attention", json, NULL});
    test_exit_status(&r, 0, "--patch");
    test_output_has(&r, "strongest: head", "--patch's table");
    test_run_free(&r);
    JsonDoc doc;
    char *text;
    if (heads && read_json(json, &doc, &text) == 0) {
        const JsonNode *patching = json_object_get(&doc, doc.nodes, "patching");
        const JsonNode *rows = patching ? json_object_get(&doc, patching, "heads") : NULL;
        CHECK(rows && rows->count == (uint32_t)L, "patching.heads is not [L][H]");
        for (int l = 0; rows && l < L; l++) {
            const JsonNode *row = json_first(rows);
            for (int k = 0; k < l; k++) row = json_next(row);
            const JsonNode *x = json_first(row);
            for (int h = 0; h < H; h++, x = json_next(x))
                CHECK(fabs(json_number(x) - heads[l * H + h]) < 1e-4, "patching.heads[%d][%d] %.6f, torch %.6f", l, h,
                      json_number(x), heads[l * H + h]);
        }
        const JsonNode *residual = patching ? json_object_get(&doc, patching, "residual") : NULL;
        CHECK(residual && residual->count == (uint32_t)(L + 1), "patching.residual is not [L + 1][t]");
        // the attribution's parts sum to the logit at each position
        const JsonNode *attribution = json_object_get(&doc, doc.nodes, "logit_attribution");
        const JsonNode *logit = attribution ? json_object_get(&doc, attribution, "logit") : NULL;
        const JsonNode *total = logit ? json_object_get(&doc, logit, "total") : NULL;
        if (CHECK(total && total->count == (uint32_t)t, "no logit_attribution.logit.total of %d", t)) {
            double parts = sum_numbers(json_object_get(&doc, logit, "embeddings"), t) +
                           sum_numbers(json_object_get(&doc, logit, "biases"), t);
            const JsonNode *mlps = json_object_get(&doc, logit, "mlps"), *hd = json_object_get(&doc, logit, "heads");
            const JsonNode *x = mlps ? json_first(mlps) : NULL;
            for (int l = 0; x && l < L; l++, x = json_next(x)) {
                parts += sum_numbers(x, t);
                const JsonNode *layer = json_first(hd);
                for (int k = 0; k < l; k++) layer = json_next(layer);
                const JsonNode *head = json_first(layer);
                for (int h = 0; h < H; h++, head = json_next(head)) parts += sum_numbers(head, t);
            }
            double want = sum_numbers(total, t);
            CHECK(fabs(parts - want) < 1e-4 * t, "the JSON's parts sum to %.7f over the positions, the logits to %.7f",
                  parts, want);
        }
        json_free(&doc);
        free(text);
    }
    analysis_fixture_free(&f);
}

// What --patch, --ablate-mean and --circuits refuse: exit 2 and a message naming the problem
TEST(generate_analysis_refuses) {
    const char *ckpt = CLI_DIR "/model.safetensors", *one = CLI_DIR "/one_layer.safetensors";
    if (!test_make_dir("tests/tmp") || !test_make_dir(CLI_DIR) || fixture_checkpoint(ckpt, 0) != 0 ||
        fixture_checkpoint(one, 1) != 0)
        return;
    struct { const char *args[8]; const char *message; } cases[] = {
        {{ckpt, "--patch", "abcd", NULL}, "needs two texts"},
        {{ckpt, "--patch", "abcd", "abc", NULL}, "both need the same length"},
        {{ckpt, "--patch", "abcd", "abcd", NULL}, "whose predictions differ"},
        {{ckpt, "--patch", "abcdabcdabcd", "abcdabcdabce", NULL}, "give 1 to 8"},
        {{ckpt, "--patch", "abcd", "abce", "-n", "5", NULL}, "not -n"},
        {{ckpt, "--ablate-mean", "2.0", "--mean-over", ckpt, "abc", NULL}, "no such head"},
        {{ckpt, "--ablate-mean", "1.x", "abc", NULL}, "is not a head"},
        {{ckpt, "--ablate-mean", "0.0", "abc", NULL}, "--mean-over FILE"},
        {{ckpt, "--mean-over", CLI_DIR "/out.txt", "abc", NULL}, "give --ablate-mean"},
        {{one, "--circuits", CLI_DIR "/c.json", NULL}, "composition needs heads in two layers"},
        {{ckpt, "--circuits", CLI_DIR "/c.txt", NULL}, "unknown extension"},
        {{ckpt, "--circuits", CLI_DIR "/c.json", "-n", "3", NULL}, "takes only --seed"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        TestRun r = test_run_program("generate", NULL, CLI_DIR "/out.txt", 60, cases[k].args);
        char what[160];
        snprintf(what, sizeof(what), "case %zu (%s %s)", k, cases[k].args[1], cases[k].args[2]);
        test_exit_status(&r, 2, what);
        test_output_has(&r, cases[k].message, what);
        test_run_free(&r);
    }
}

// --ablate-mean over a file, in --score, against the heads' means taken over that file here; and
// --circuits writes a file whose copying scores are circuits_compute's
TEST(generate_ablate_mean_and_circuits) {
    const char *ckpt = CLI_DIR "/model.safetensors", *text = CLI_DIR "/text.txt", *json = CLI_DIR "/circuits.json";
    if (!test_make_dir("tests/tmp") || !test_make_dir(CLI_DIR) || fixture_checkpoint(ckpt, 0) != 0) return;
    const char letters[] = "abcabdkjihgfeedcbaabcdefghijkkjihabca";
    if (test_write_file(text, letters, strlen(letters)) != 0) return;
    remove(json);
    TestRun plain = test_run_program("generate", NULL, CLI_DIR "/plain.txt", 60, (const char *[]){ckpt, "--score", text, NULL});
    TestRun mean = test_run_program("generate", NULL, CLI_DIR "/mean.txt", 60,
                                    (const char *[]){ckpt, "--score", text, "--ablate-mean", "1.0", "--mean-over", text, NULL});
    test_exit_status(&plain, 0, "--score");
    test_exit_status(&mean, 0, "--score --ablate-mean");
    CHECK(strcmp(plain.output, mean.output) != 0, "--ablate-mean changed nothing: %s", mean.output);
    test_run_free(&plain);
    test_run_free(&mean);
    TestRun r = test_run_program("generate", NULL, CLI_DIR "/circuits.txt", 60, (const char *[]){ckpt, "--circuits", json, NULL});
    test_exit_status(&r, 0, "--circuits");
    test_output_has(&r, "copying", "--circuits's summary");
    test_run_free(&r);
    AnalysisFixture f;
    JsonDoc doc;
    char *body;
    if (analysis_fixture_load(&f) != 0) return;
    const float *want = analysis_tensor(&f, "circuits.ov_copying_score_raw", 2, (int64_t[]){2, 2});
    if (want && read_json(json, &doc, &body) == 0) {
        const JsonNode *scores = json_object_get(&doc, doc.nodes, "ov_copying_score_raw");
        const JsonNode *baseline = json_object_get(&doc, doc.nodes, "composition_baseline");
        CHECK(scores && scores->count == 2 && baseline && baseline->type == JSON_NUMBER, "keys missing from %s", json);
        for (int l = 0; scores && l < 2; l++) {
            const JsonNode *row = json_first(scores);
            if (l) row = json_next(row);
            const JsonNode *x = json_first(row);
            for (int h = 0; h < 2; h++, x = json_next(x))
                CHECK(fabs(json_number(x) - want[l * 2 + h]) < 1e-6, "ov_copying_score_raw[%d][%d] %.8f, torch %.8f", l, h,
                      json_number(x), want[l * 2 + h]);
        }
        json_free(&doc);
        free(body);
    }
    analysis_fixture_free(&f);
}
