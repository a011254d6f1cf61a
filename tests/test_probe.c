// Tests of what the timeline measures: the head scores of hand-built attention patterns
// against the values their definitions give (analysis/head_scores.h), the probe of a
// constructed model that copies the previous character (training/probe.h), the update-to-weight
// ratios of the parameter groups (training/update_ratios.h), and the logit lens against the
// model's own predictions and a double-precision recomputation (analysis/logit_lens.h), and as
// the inspector's .json and .html write it (viewer/attention_export.h).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../analysis/logit_lens.h"
#include "../common/utf8.h"
#include "../format/json.h"
#include "../model/adamw.h"
#include "../model/gpt.h"
#include "../model/layers.h"
#include "../training/data_parallel.h"
#include "../training/probe.h"
#include "../training/schedule.h"
#include "../training/update_ratios.h"
#include "../viewer/attention_export.h"
#include "test.h"

// H_n = 1 + 1/2 + ... + 1/n
static double harmonic(int n) {
    double h = 0.0;
    for (int k = 1; k <= n; k++) h += 1.0 / k;
    return h;
}

// (t, t) uniform causal attention: row i gives 1 / (i + 1) to keys 0..i.
static float *uniform_attention(int t) {
    float *a = calloc((size_t)t * t, sizeof(float));
    for (int i = 0; i < t; i++)
        for (int j = 0; j <= i; j++) a[i * t + j] = 1.0f / (i + 1);
    return a;
}

// (t, t) with each row's weight 1 on key key_of(i) (clamped to 0..i).
static float *one_hot_attention(int t, int (*key_of)(int i, int t)) {
    float *a = calloc((size_t)t * t, sizeof(float));
    for (int i = 0; i < t; i++) {
        int j = key_of(i, t);
        a[i * t + (j < 0 ? 0 : j > i ? i : j)] = 1.0f;
    }
    return a;
}
static int previous(int i, int t) { return i - 1; }
static int itself(int i, int t) { return i; }
// on a run of t / 2 repeated: in the second half, the key right after the query's earlier copy
static int after_copy(int i, int t) { return i >= t / 2 ? i - t / 2 + 1 : 0; }

TEST(probe_head_scores_of_hand_built_patterns) {
    const int t = 32, n = 16;
    int tokens[32];
    for (int i = 0; i < n; i++) tokens[i] = tokens[n + i] = 3 + i;  // n distinct, repeated
    float *uniform = uniform_attention(t), *prev = one_hot_attention(t, previous);
    float *self = one_hot_attention(t, itself), *induction = one_hot_attention(t, after_copy);
    // uniform rows: (H_t - 1) / t on the previous key, (H_2n - H_n) / 2n on the induction keys,
    // log2(t!) / t bits of entropy
    double log2_factorial = 0.0;
    for (int k = 2; k <= t; k++) log2_factorial += log2(k);
    const struct { const char *what; const float *att; double prev, induction, entropy; } cases[] = {
        {"uniform", uniform, (harmonic(t) - 1) / t, (harmonic(2 * n) - harmonic(n)) / (2 * n), log2_factorial / t},
        {"previous token", prev, (t - 1.0) / t, 0.0, 0.0},
        {"itself", self, 0.0, 0.0, 0.0},
        // the induction head: every query of the second half on its key, so n of 2n rows: 1/2
        {"induction", induction, 1.0 / t, 0.5, 0.0},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        double p = head_score(HEAD_PREVIOUS_TOKEN, cases[c].att, &(HeadText){NULL, NULL, NULL, t});
        double q = head_score(HEAD_INDUCTION, cases[c].att, &(HeadText){tokens, NULL, NULL, t});
        double e = head_attention_entropy(cases[c].att, t);
        CHECK(fabs(p - cases[c].prev) < 1e-6, "%s: previous-token %.7f, want %.7f", cases[c].what, p, cases[c].prev);
        CHECK(fabs(q - cases[c].induction) < 1e-6, "%s: induction %.7f, want %.7f", cases[c].what, q,
              cases[c].induction);
        CHECK(fabs(e - cases[c].entropy) < 1e-5, "%s: entropy %.6f, want %.6f", cases[c].what, e, cases[c].entropy);
    }
    // the previous-token head at the boundary of the run: row n attends to key n - 1, which is not
    // right after an earlier copy of token n (that is key 1): no induction credit
    HeadText run = {tokens, NULL, NULL, t};
    CHECK(head_score(HEAD_INDUCTION, prev, &run) == 0.0, "the previous-token head scores %g as induction",
          head_score(HEAD_INDUCTION, prev, &run));
    // a token seen twice before: both keys after its copies count, so a row split between them
    // scores 1 (TransformerLens's duplicate pattern marks every earlier occurrence)
    int dup[6] = {7, 8, 7, 9, 7, 5};
    float split[36] = {0};
    for (int i = 0; i < 6; i++) split[i * 6 + i] = 1.0f;
    split[4 * 6 + 4] = 0.0f, split[4 * 6 + 1] = 0.5f, split[4 * 6 + 3] = 0.5f;  // query 4 ('7') on keys 1 and 3
    HeadText dup_text = {dup, NULL, NULL, 6};
    CHECK(fabs(head_score(HEAD_INDUCTION, split, &dup_text) - 1.0 / 6) < 1e-7, "split row: induction %g, want 1/6",
          head_score(HEAD_INDUCTION, split, &dup_text));
    // the same token twice in a row: the induction pattern marks the query's own position
    int twice[3] = {4, 4, 2};
    float diagonal[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    HeadText twice_text = {twice, NULL, NULL, 3};
    CHECK(fabs(head_score(HEAD_INDUCTION, diagonal, &twice_text) - 1.0 / 3) < 1e-7,
          "repeated token: induction %g, want 1/3", head_score(HEAD_INDUCTION, diagonal, &twice_text));
    free(uniform), free(prev), free(self), free(induction);
}

TEST(probe_repeated_sequence) {
    int tokens[64];
    CHECK(head_repeat_run(64) == 32 && head_repeat_run(16) == 8 && head_repeat_run(1) == 0 &&
              head_repeat_run(256) == HEAD_REPEAT_RUN,
          "repeat runs %d %d %d %d", head_repeat_run(64), head_repeat_run(16), head_repeat_run(1), head_repeat_run(256));
    head_repeated_sequence(tokens, 32, 65, 1337);
    int distinct = 1;
    for (int i = 0; i < 32; i++) {
        CHECK(tokens[i] == tokens[32 + i] && tokens[i] >= 0 && tokens[i] < 65, "token %d: %d and %d", i, tokens[i],
              tokens[32 + i]);
        for (int k = 0; k < i; k++) distinct &= tokens[k] != tokens[i];
    }
    CHECK(distinct, "the run of 32 from a vocabulary of 65 repeats a token");
    int again[64];
    head_repeated_sequence(again, 32, 65, 1337);
    CHECK(memcmp(tokens, again, sizeof(tokens)) == 0, "the same seed gave another sequence");
    head_repeated_sequence(tokens, 8, 3, 1);  // fewer tokens than the run: drawn with replacement
    for (int i = 0; i < 8; i++) CHECK(tokens[i] >= 0 && tokens[i] < 3, "token %d of a vocabulary of 3", tokens[i]);
}

// A one-layer, one-head model whose head attends from each position to the one before it:
// position i's embedding is the unit vector e_i (tokens embed to 0), so after ln_1 it is
// a e_i - b 1; the keys are that vector, the queries s times it shifted by one
// (q_r = s x_{r+1}), and q_i . k_j = a^2 s [j = i - 1] plus what does not depend on j.
static int build_previous_token_model(GPT *m, int T, char err[ERR_LEN]) {
    const int C = T + 8;
    GPTConfig c = {4, T, 1, 1, C, C, 0, 0.0f, POSITION_LEARNED};
    if (gpt_build(m, &c, 0, err) != 0) return -1;
    for (int i = 0; i < T; i++) m->params.wpe[(size_t)i * C + i] = 1.0f;
    for (int k = 0; k < C; k++) m->params.blocks.ln1w[k] = m->params.blocks.ln2w[k] = m->params.lnfw[k] = 1.0f;
    float *q = m->params.blocks.qkvw, *k = q + (size_t)C * C;  // (3A, C): queries, keys, values
    for (int r = 0; r + 1 < C; r++) q[(size_t)r * C + r + 1] = 10.0f;
    for (int r = 0; r < C; r++) k[(size_t)r * C + r] = 1.0f;
    return gpt_alloc_activations(m, 1, err);
}

TEST(probe_previous_token_model_scores_one) {
    const int T = 32;
    GPT model;
    char err[ERR_LEN];
    if (!CHECK(build_previous_token_model(&model, T, err) == 0, "%s", err)) return;
    ProbeHeader h = {0};
    h.n_layer = 1, h.n_head = 1, h.vocab_size = 4, h.block_size = T, h.probe_len = T, h.repeat_len = T;
    h.groups = 1, h.prompt_len = 0, h.sample_chars = 0;
    if (!CHECK(probe_header_alloc(&h, err) == 0, "%s", err)) return;
    for (int i = 0; i <= T; i++) h.passage[i] = i % 4;
    for (int i = 0; i < T; i++) h.repeated[i] = i % (T / 2) % 4;
    Probe probe;
    ProbeRecord rec;
    if (!CHECK(probe_init(&probe, &model, &h, err) == 0 && probe_record_alloc(&rec, &h, err) == 0, "%s", err)) return;
    rec.flags = 0;
    CHECK(probe_measure(&probe, &rec, err) == 0, "%s", err);
    // every query but the first (which has only itself) on the key before it: (T - 1) / T
    CHECK(rec.previous_token[0] > 0.96f && rec.previous_token[0] <= (T - 1.0f) / T + 1e-6f,
          "previous-token score %.5f, want about %.5f", rec.previous_token[0], (T - 1.0) / T);
    CHECK(rec.entropy[0] < 0.05f, "a head with one key per query has entropy %g bits", rec.entropy[0]);
    CHECK(rec.flags & PROBE_HAS_PROBE, "the record's flags %u lack PROBE_HAS_PROBE", rec.flags);
    // the stored weights: row 5 has 255 on key 4 (its quantized sqrt(1)) and 0 elsewhere
    const uint8_t *row5 = rec.att_passage + 5 * 6 / 2;
    CHECK(row5[4] == 255 && row5[0] == 0 && row5[5] == 0, "row 5 stored as %u %u .. %u %u", row5[0], row5[1], row5[4],
          row5[5]);
    probe_record_free(&rec);
    probe_free(&probe);
    probe_header_free(&h);
    gpt_free(&model);
}

// A random small model (2 layers, vocabulary 11) and a forward of its one sequence of t.
static int random_model(GPT *m, int t, int *tokens, char err[ERR_LEN]) {
    GPTConfig c = {11, 16, 2, 2, 24, 12, 1, 0.0f, POSITION_LEARNED};
    if (gpt_build(m, &c, 0, err) != 0) return -1;
    gpt_init_weights(m, 7);
    // larger weights than the initialisation's, so that the layers' predictions differ
    for (size_t i = 0; i < m->num_parameters; i++) m->params_memory[i] *= 6.0f;
    if (gpt_alloc_activations(m, 1, err) != 0) return -1;
    for (int i = 0; i < t; i++) tokens[i] = (i * 7 + 3) % 11;
    gpt_forward(m, tokens, NULL, 1, t, NULL);
    return 0;
}

// Row r of the lens in double precision: the residual stream through the final LayerNorm and
// the tied head, probabilities at position i into p (V).
static void lens_in_double(const GPT *m, int r, int i, double *p) {
    const GPTConfig *c = &m->config;
    const int C = c->n_embd, V = c->vocab_size;
    const float *x = gpt_residual_stream(m, r) + (size_t)i * C;
    double mean = 0.0, var = 0.0;
    for (int k = 0; k < C; k++) mean += x[k];
    mean /= C;
    for (int k = 0; k < C; k++) var += (x[k] - mean) * (x[k] - mean);
    double rstd = 1.0 / sqrt(var / C + LAYERNORM_EPS), max = -INFINITY, sum = 0.0;
    for (int v = 0; v < V; v++) {
        double z = 0.0;
        for (int k = 0; k < C; k++)
            z += ((x[k] - mean) * rstd * m->params.lnfw[k] + m->params.lnfb[k]) * m->params.wte[(size_t)v * C + k];
        p[v] = z;
        max = fmax(max, z);
    }
    for (int v = 0; v < V; v++) sum += p[v] = exp(p[v] - max);
    for (int v = 0; v < V; v++) p[v] /= sum;
}

TEST(probe_logit_lens_last_layer_is_the_model) {
    const int t = 13;
    GPT model;
    int tokens[16], next[16];
    char err[ERR_LEN];
    if (!CHECK(random_model(&model, t, tokens, err) == 0, "%s", err)) return;
    for (int i = 0; i < t; i++) next[i] = i + 1 < t ? tokens[i + 1] : -1;
    LogitLens lens;
    if (!CHECK(logit_lens_init(&lens, &model.config, t, err) == 0, "%s", err)) return;
    logit_lens_compute(&lens, &model, next);
    const int V = model.config.vocab_size, last = lens.rows - 1;
    CHECK(lens.rows == 3 && lens.k == 3, "rows %d, k %d", lens.rows, lens.k);
    // the last row's logits are the model's own (the same kernels on the same rows)
    CHECK(rel_error_ff(lens.logits, model.acts.logits, (size_t)t * V) <= 1e-6,
          "the last row's logits differ from the model's by %g", rel_error_ff(lens.logits, model.acts.logits, (size_t)t * V));
    int rows_differ = 0;
    for (int i = 0; i < t; i++) {
        LensCell want;
        logit_lens_cell(model.acts.logits + (size_t)i * V, V, next[i], &want);
        const LensCell *got = &lens.cells[(size_t)last * t + i];
        CHECK(memcmp(got->top, want.top, sizeof(want.top)) == 0 && got->next_rank == want.next_rank,
              "position %d: the last row's top or rank differ from the model's", i);
        for (int k = 0; k < 3; k++)
            CHECK(fabsf(got->top_prob[k] - want.top_prob[k]) < 1e-6f, "position %d: p %g vs the model's %g", i,
                  got->top_prob[k], want.top_prob[k]);
        CHECK(i + 1 < t ? fabsf(got->next_prob - want.next_prob) < 1e-6f && got->next_rank >= 1 && got->next_rank <= V
                        : isnan(got->next_prob) && got->next_rank == 0,
              "position %d: next p %g rank %d", i, got->next_prob, got->next_rank);
        // every row against the double-precision lens
        for (int r = 0; r < lens.rows; r++) {
            double p[11];
            lens_in_double(&model, r, i, p);
            const LensCell *cell = &lens.cells[(size_t)r * t + i];
            int best = 0;
            for (int v = 1; v < V; v++) best = p[v] > p[best] ? v : best;
            CHECK(fabs(cell->top_prob[0] - p[cell->top[0]]) < 1e-4 && p[cell->top[0]] >= p[best] - 1e-6,
                  "row %d position %d: top %d with p %g, the double lens has %d with %g", r, i, cell->top[0],
                  cell->top_prob[0], best, p[best]);
            if (next[i] >= 0)
                CHECK(fabs(cell->next_prob - p[next[i]]) < 1e-4, "row %d position %d: p(next) %g, double %g", r, i,
                      cell->next_prob, p[next[i]]);
            rows_differ += r < last && cell->top[0] != lens.cells[(size_t)last * t + i].top[0];
        }
    }
    CHECK(rows_differ > 0, "every row of the lens predicts what the last one does: the rows are not the layers'");
    logit_lens_free(&lens);
    gpt_free(&model);
}

TEST(probe_logits_top_ties_and_small_vocabulary) {
    float z[4] = {1.0f, 3.0f, 3.0f, -2.0f};
    int32_t top[5];
    float prob[5], next_prob;
    int32_t rank;
    double log_p = logits_top(z, 4, 5, 2, top, prob, &next_prob, &rank);
    CHECK(top[0] == 1 && top[1] == 2 && top[2] == 0 && top[3] == 3 && top[4] == -1, "order %d %d %d %d %d", top[0],
          top[1], top[2], top[3], top[4]);
    CHECK(rank == 2 && fabs(log_p - log(next_prob)) < 1e-6 && prob[4] == 0.0f, "rank %d, log p %g vs p %g", rank,
          log_p, next_prob);
    double sum = 0.0;
    for (int k = 0; k < 4; k++) sum += prob[k];
    CHECK(fabs(sum - 1.0) < 1e-6, "probabilities sum to %g", sum);
    CHECK(isnan(logits_top(z, 4, 2, -1, top, prob, &next_prob, &rank)) && isnan(next_prob) && rank == 0,
          "an unknown next token");
}

TEST(probe_update_ratios_per_group) {
    GPTConfig c = {9, 8, 2, 2, 16, 8, 1, 0.0f, POSITION_LEARNED};
    GPT m;
    AdamW opt;
    DataParallel dp;
    char err[ERR_LEN], names[PROBE_MAX_GROUPS][PROBE_GROUP_NAME];
    if (!CHECK(gpt_build(&m, &c, 1, err) == 0 && adamw_init(&opt, &m, 0.9f, 0.99f, 1e-8f, 0.1f, err) == 0 &&
                   data_parallel_plan(&dp, 4, 8, 1, 0, m.num_parameters, err) == 0,
               "%s", err))
        return;
    int groups = update_groups(&c, names);
    CHECK(groups == 16 && !strcmp(names[0], "transformer.wte.weight") && !strcmp(names[4], "attn.c_attn.weight") &&
              !strcmp(names[15], "transformer.ln_f.bias"),
          "%d groups: %s, %s, ..., %s", groups, names[0], names[4], names[groups - 1]);
    GPTConfig no_bias = c;
    no_bias.qkv_bias = 0;
    CHECK(update_groups(&no_bias, names) == 15, "without the qkv bias: %d groups", update_groups(&no_bias, names));
    update_groups(&c, names);
    gpt_init_weights(&m, 5);
    float *before = malloc(m.num_parameters * sizeof(float));
    memcpy(before, m.params_memory, m.num_parameters * sizeof(float));
    fill_uniform(m.grads_memory, m.num_parameters, 2);
    adamw_update(&opt, m.params_memory, m.grads_memory, 3e-3f);
    float ratios[PROBE_MAX_GROUPS];
    update_ratios(&dp, &m, &opt, 3e-3f, ratios);
    double moved[PROBE_MAX_GROUPS] = {0}, weights[PROBE_MAX_GROUPS] = {0};
    for (int i = 0; i < gpt_num_tensors(&c); i++) {
        TensorInfo info;
        gpt_tensor_info(&c, i, &info);
        int g = 0;
        while (g < groups && !strstr(info.name, names[g])) g++;
        for (size_t k = info.offset; k < info.offset + info.size; k++) {
            moved[g] += ((double)before[k] - m.params_memory[k]) * ((double)before[k] - m.params_memory[k]);
            weights[g] += (double)m.params_memory[k] * m.params_memory[k];
        }
    }
    for (int g = 0; g < groups; g++) {
        double want = weights[g] > 0 ? sqrt(moved[g]) / sqrt(weights[g]) : NAN;
        CHECK(isnan(want) ? isnan(ratios[g]) : fabs(ratios[g] - want) <= 1e-4 * want, "%s: ratio %g, want %g", names[g],
              ratios[g], want);
    }
    // biases start at 0, so after the first update they are that update: a ratio of 1
    CHECK(fabsf(ratios[5] - 1.0f) < 1e-5f && ratios[0] > 0 && ratios[0] < 0.5f,
          "%s (from 0) has a ratio %g, want 1; %s %g", names[5], ratios[5], names[0], ratios[0]);
    free(before);
    adamw_free(&opt);
    gpt_free(&m);
}

// The inspector's .json holds the lens it was given: each row's top 3 as characters with their
// probabilities, the next character's probability and rank (null at the last position); the
// .html holds it too.
TEST(probe_logit_lens_in_the_inspector) {
    const int t = 12;
    GPT model;
    int tokens[16], next[16];
    char err[ERR_LEN];
    if (!CHECK(random_model(&model, t, tokens, err) == 0, "%s", err)) return;
    for (int i = 0; i < t; i++) next[i] = i + 1 < t ? tokens[i + 1] : -1;
    LogitLens lens;
    if (!CHECK(logit_lens_init(&lens, &model.config, t, err) == 0, "%s", err)) return;
    logit_lens_compute(&lens, &model, next);
    const int L = model.config.n_layer, H = model.config.n_head;
    uint32_t vocab[11], chars[16];
    for (int v = 0; v < 11; v++) vocab[v] = v == 3 ? 0x263A : 'a' + v;  // a 3-byte character among them
    for (int i = 0; i < t; i++) chars[i] = vocab[tokens[i]];
    float *att = malloc((size_t)L * H * t * t * sizeof(float));
    for (int l = 0; l < L; l++) memcpy(att + (size_t)l * H * t * t, gpt_attention_weights(&model, l), (size_t)H * t * t * 4);
    AttentionLens shown = {lens.rows, lens.cells, vocab};
    test_make_dir("tests/tmp");
    const char *path = "tests/tmp/probe_lens.json", *page = "tests/tmp/probe_lens.html";
    Attention recorded = {chars, t, L, H, att, NULL, &shown, NULL, NULL, NULL, NULL};
    CHECK(attention_export(path, &recorded, 1, err) == 0 && attention_export(page, &recorded, 1, err) == 0, "export: %s",
          err);
    size_t len;
    char *text = test_read_file(path, &len);
    JsonDoc doc;
    if (!CHECK(text && json_parse(text, len, 1 << 20, &doc, err) == 0, "%s: %s", path, err)) return;
    const JsonNode *node = json_object_get(&doc, doc.nodes, "logit_lens");
    const JsonNode *rows = node ? json_object_get(&doc, node, "rows") : NULL;
    const JsonNode *top = node ? json_object_get(&doc, node, "top") : NULL;
    const JsonNode *prob = node ? json_object_get(&doc, node, "next_prob") : NULL;
    const JsonNode *rank = node ? json_object_get(&doc, node, "next_rank") : NULL;
    if (CHECK(rows && top && prob && rank && rows->count == 3 && top->count == 3 && prob->count == 3 && rank->count == 3,
              "logit_lens: rows, top, next_prob and next_rank of 3 rows")) {
        CHECK(!strcmp(json_string(&doc, json_first(rows)), "embeddings") &&
                  !strcmp(json_string(&doc, json_next(json_next(json_first(rows)))), "block 1"), "the rows' names");
        int bad = 0;
        const JsonNode *top_row = json_first(top), *prob_row = json_first(prob), *rank_row = json_first(rank);
        for (int r = 0; r < lens.rows; r++) {
            const JsonNode *cell = json_first(top_row), *p = json_first(prob_row), *k = json_first(rank_row);
            for (int i = 0; i < t; i++) {
                const LensCell *want = &lens.cells[r * t + i];
                const JsonNode *pair = json_first(cell);
                char ch[5] = {0};
                utf8_encode(vocab[want->top[0]], ch);
                bad += cell->count != 3 || strcmp(json_string(&doc, json_first(pair)), ch) != 0 ||
                       (float)json_number(json_next(json_first(pair))) != want->top_prob[0];
                bad += i + 1 < t ? (float)json_number(p) != want->next_prob || json_number(k) != want->next_rank
                                 : p->type != JSON_NULL || k->type != JSON_NULL;
                cell = json_next(cell), p = json_next(p), k = json_next(k);
            }
            top_row = json_next(top_row), prob_row = json_next(prob_row), rank_row = json_next(rank_row);
        }
        CHECK(bad == 0, "%d lens values in the .json differ from the lens", bad);
    }
    json_free(&doc);
    free(text);
    text = test_read_file(page, &len);
    CHECK(text && strstr(text, "\"lens\":{\"rows\":3,\"cells\":["), "the page holds no lens");
    free(text);
    free(att);
    logit_lens_free(&lens);
    gpt_free(&model);
}

// The early probes' schedule (training/schedule.h): the default 1-2-5 steps below --eval-every,
// none, a list as given; a list that cannot be kept is refused naming what is wrong.
TEST(probe_schedule_default_list_and_refusals) {
    static const struct {
        const char *text;
        long eval_every, last;
        int n;
        long steps[8];
    } good[] = {
        {"", 250, 2000, 5, {10, 20, 50, 100, 200}},
        {NULL, 1000, 5000, 6, {10, 20, 50, 100, 200, 500}},
        {"", 10, 100, 0, {0}},
        {"", 21, 100, 2, {10, 20}},
        {"none", 250, 2000, 0, {0}},
        {"1,2,3,250,2000", 250, 2000, 5, {1, 2, 3, 250, 2000}},
    };
    char err[ERR_LEN];
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        ProbeSchedule s;
        int rc = probe_schedule_make(&s, good[i].text, good[i].eval_every, good[i].last, err);
        int same = rc == 0 && s.n == good[i].n;
        for (int k = 0; same && k < s.n; k++) same = s.steps[k] == good[i].steps[k];
        CHECK(same, "'%s' every %ld: rc %d, %d steps, the first %ld", good[i].text ? good[i].text : "(default)",
              good[i].eval_every, rc, s.n, s.n ? s.steps[0] : -1);
    }
    ProbeSchedule s;
    CHECK(probe_schedule_make(&s, "", 250, 2000, err) == 0 && probe_schedule_has(&s, 50) && !probe_schedule_has(&s, 60)
              && probe_schedule_left(&s, 20, 2000, 250) == 3 && probe_schedule_left(&s, 200, 2000, 250) == 0,
          "the default schedule's steps, or those left after 20 and 200");
    char many[400] = "1";
    for (int k = 2; k <= PROBE_MAX_EARLY + 1; k++) snprintf(many + strlen(many), sizeof(many) - strlen(many), ",%d", k);
    const struct { const char *text, *said; } bad[] = {
        {"20,10", "step 10 after 20"}, {"0", "'0' is not a step"}, {"x", "'x' is not a step"},
        {"10,", "'' is not a step"}, {"10,,20", "'' is not a step"}, {"5x", "'5x'"}, {"-5", "'-5'"},
        {"3000", "step 3000 is after the run's last, 2000"}, {many, "more than 32 steps"},
    };
    char text[ERR_LEN];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = probe_schedule_make(&s, bad[i].text, 250, 2000, err);
        snprintf(text, sizeof(text), "%s", rc == -2 ? err : "");
        CHECK(rc == -2 && strstr(text, bad[i].said), "--probe-steps %.20s: rc %d, '%s'", bad[i].text, rc, text);
    }
    probe_schedule_make(&s, "", 250, 2000, err);
    probe_schedule_describe(&s, 1, 0, 250, text, sizeof(text));
    CHECK(strcmp(text, "0, 10, 20, 50, 100, 200 and every 250") == 0, "described as '%s'", text);
    // a run resumed at step 150, or 500: only the probes to come
    probe_schedule_describe(&s, 0, 150, 250, text, sizeof(text));
    CHECK(strcmp(text, "200 and every 250 from step 250") == 0, "resumed at 150: described as '%s'", text);
    probe_schedule_describe(&s, 0, 500, 250, text, sizeof(text));
    CHECK(strcmp(text, "every 250 from step 750") == 0, "resumed at 500: described as '%s'", text);
    probe_schedule_make(&s, "none", 250, 2000, err);
    probe_schedule_describe(&s, 0, 0, 250, text, sizeof(text));
    CHECK(strcmp(text, "every 250") == 0, "none described as '%s'", text);
}
