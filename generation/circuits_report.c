#include "circuits_report.h"

#include <math.h>
#include <stdio.h>

#include "../analysis/circuits.h"
#include "../viewer/circuits_export.h"
#include "job.h"

// "  1.0  copying  0.996 (raw -0.995)  diagonal 1.00 (raw 0.00)" for each head
static void print_heads(FILE *out, const Circuits *c) {
    fprintf(out, "OV circuits (copying score: sum of eigenvalues / sum of their moduli, 1 copies; extended, and raw "
            "from W_E alone), with the share of characters whose own logit is the largest:\n");
    for (int l = 0; l < c->n_layer; l++)
        for (int h = 0; h < c->n_head; h++) {
            int at = l * c->n_head + h;
            fprintf(out, "  head %d.%d  copying %6.3f (raw %6.3f)  diagonal %.2f (raw %.2f)\n", l, h,
                    c->ov_copying_score[at], c->ov_copying_score_raw[at], c->ov_diagonal_share[at],
                    c->ov_diagonal_share_raw[at]);
        }
}

// For each head of a later layer, the earlier head whose composition into it scores highest,
// of each kind.
static void print_compositions(FILE *out, const Circuits *c) {
    const int H = c->n_head, heads = c->n_layer * H;
    const double *kinds[3] = {c->composition_q, c->composition_k, c->composition_v};
    fprintf(out, "composition (the strongest earlier head into each head; random matrices of these shapes score %.3f "
            "on average, %d pairs, seed %llu; a weak instrument: --patch measures what a head does):\n",
            c->composition_baseline, COMPOSITION_BASELINE_SAMPLES, (unsigned long long)c->baseline_seed);
    for (int b = H; b < heads; b++) {
        fprintf(out, "  into head %d.%d:", b / H, b % H);
        for (int k = 0; k < 3; k++) {
            int best = 0;
            for (int a = 1; a < (b / H) * H; a++)
                if (kinds[k][(size_t)a * heads + b] > kinds[k][(size_t)best * heads + b]) best = a;
            fprintf(out, "  %c from %d.%d %.3f", "QKV"[k], best / H, best % H, kinds[k][(size_t)best * heads + b]);
        }
        fputc('\n', out);
    }
}

int circuits_report(const GPT *model, const uint32_t *vocab_chars, uint64_t seed, const char *path, int replace,
                    const char *title, FILE *out, char err[ERR_LEN]) {
    const GPTConfig *cfg = &model->config;
    if (cfg->n_layer < 2)
        return error_status(err, EXIT_USAGE, "--circuits: composition needs heads in two layers, and this model has one "
                            "(a head composes with the heads of the layers after it)");
    if (circuits_check_path(path, err) != 0) return EXIT_USAGE;
    Circuits c;
    if (circuits_compute(&c, model, seed, err) != 0) return EXIT_DATA;
    CircuitsFile file = {&c, vocab_chars, cfg->n_embd, cfg->head_size, cfg->block_size, title};
    int rc = circuits_export(path, &file, replace, err);
    if (rc == 0) {
        print_heads(out, &c);
        print_compositions(out, &c);
    }
    circuits_free(&c);
    return rc == 0 ? 0 : rc == -2 ? EXIT_USAGE : EXIT_DATA;
}

// ----------------------------------------------------------------------------
// ./generate --circuits FILE: the job's stages (generation/job.h)

int check_circuits_memory(const Job *j, char err[ERR_LEN]) {
    const GPTConfig *c = &j->ck.config;
    GPTMemoryPlan plan;
    gpt_memory_plan(c, 1, GPT_PLAN_FORWARD, &plan);
    plan.generation = circuits_bytes(c);
    return check_job_memory(j, &plan, c, "computing its circuits", err);
}

int write_circuits(const Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    int rc = circuits_report(&j->model, j->vocab.chars, o->seed, o->circuits, o->force, o->checkpoint, stdout, err);
    if (rc != 0) return rc;
    if (j->flush_stdout(err) != 0) return EXIT_DATA;
    fprintf(stderr, "circuits of %d layers x %d heads written to %s\n", j->model.config.n_layer, j->model.config.n_head,
            o->circuits);
    return 0;
}
