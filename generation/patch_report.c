#include "patch_report.h"

#include <stdlib.h>
#include <string.h>

#include "attention_record.h"
#include "job.h"
#include "prompt.h"

// cp as a table shows it in a column of `width`: printable characters themselves, a space as
// ' ', the others as U+XXXX
static void put_char(FILE *out, uint32_t cp, int width) {
    char shown[5];
    prompt_printable_char(cp, shown);
    int n = 1;
    if (shown[0] && cp != ' ') fputs(shown, out);
    else if (cp == ' ') n = fprintf(out, "' '");
    else n = fprintf(out, "U+%04X", (unsigned)cp);
    fprintf(out, "%*s", width > n ? width - n : 0, "");
}

// The heads' shares, a layer a row, then the strongest heads.
static void print_heads(FILE *out, const Patching *p) {
    const int L = p->n_layer, H = p->n_head;
    fprintf(out, "each head's output patched at every position (share of the difference restored):\n       ");
    for (int h = 0; h < H; h++) fprintf(out, "   head %-2d", h);
    for (int l = 0; l < L; l++) {
        fprintf(out, "\nlayer %d", l);
        for (int h = 0; h < H; h++) fprintf(out, " %9.3f", p->heads[l * H + h]);
    }
    fputs("\nstrongest:", out);
    int shown[5], n = 0;
    for (; n < 5 && n < L * H; n++) {  // the n-th largest, each of the first found among equals
        int best = -1;
        for (int i = 0; i < L * H; i++) {
            int taken = 0;
            for (int k = 0; k < n; k++) taken |= shown[k] == i;
            if (!taken && (best < 0 || p->heads[i] > p->heads[best])) best = i;
        }
        shown[n] = best;
        fprintf(out, "%s head %d.%d %.3f", n ? "," : "", best / H, best % H, p->heads[best]);
    }
    fputc('\n', out);
}

// The residual stream's shares: a position a row, the stream entering each block and ln_f.
static void print_residual(FILE *out, const Patching *p, const uint32_t *chars, const int *clean,
                           const int *corrupted) {
    const int L = p->n_layer, t = p->t;
    fprintf(out, "the residual stream patched at one position (share restored), entering each block and ln_f:\n"
            "position  clean   corrupted   embeddings");
    for (int l = 0; l < L; l++) fprintf(out, "  after %-3d", l);
    fputc('\n', out);
    for (int i = 0; i < t; i++) {
        fprintf(out, "%8d  ", i);
        put_char(out, chars[clean[i]], 8);
        put_char(out, chars[corrupted[i]], 7);
        fputs(clean[i] == corrupted[i] ? "    " : "(*) ", out);
        for (int l = 0; l <= L; l++) fprintf(out, " %10.3f", p->residual[(size_t)l * t + i]);
        fputc('\n', out);
    }
}

void patch_report_print(FILE *out, const Patching *p, const uint32_t *chars, const int *clean, const int *corrupted) {
    fputs("clean run: most likely next ", out);
    put_char(out, chars[p->answer_clean], 0);
    fputs("; corrupted run: ", out);
    put_char(out, chars[p->answer_corrupted], 0);
    fprintf(out, "\nmetric: logit(clean's) - logit(corrupted's) at the last position: %.4f clean, %.4f corrupted; a "
            "share of 1 restores the clean run's, 0 changes nothing\n", p->metric_clean, p->metric_corrupted);
    print_heads(out, p);
    print_residual(out, p, chars, clean, corrupted);
}

// ----------------------------------------------------------------------------
// ./generate --patch CLEAN CORRUPTED: the job's stages (generation/job.h)

int read_patch_texts(Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    char why[ERR_LEN];
    int rc = prompt_encode(&j->prompt, &j->vocab, o->patch, strlen(o->patch), o->skip_unknown, "the clean text", why);
    if (rc == 0)
        rc = prompt_encode(&j->corrupted, &j->vocab, o->prompt, strlen(o->prompt), o->skip_unknown, "the corrupted text",
                           why);
    if (rc != 0) return error_status(err, rc == -1 ? EXIT_USAGE : EXIT_DATA, "--patch: %s", why);
    const GPTConfig *c = &j->ck.config;
    long t = j->prompt.len;
    if (t != j->corrupted.len)
        return error_status(err, EXIT_USAGE, "--patch: the clean text has %ld characters and the corrupted one %ld: "
                            "patching replaces a position's activations by the other text's, so both need the same "
                            "length", t, j->corrupted.len);
    if (t < 1 || t > c->block_size)
        return error_status(err, EXIT_USAGE, "--patch: the texts have %ld characters: give 1 to %d (the block size)", t,
                            c->block_size);
    GPTMemoryPlan plan;
    gpt_memory_plan(c, 1, GPT_PLAN_FORWARD, &plan);
    plan.generation = patching_bytes(c, (int)t) + (o->num_attention ? attention_record_memory(c, (int)t) : 0.0);
    return check_job_memory(j, &plan, c, "patching two texts", err);
}

long patching_runs(const Job *j) {
    const GPTConfig *c = &j->model.config;
    return (long)c->n_layer * c->n_head + (c->n_layer + 1) * j->prompt.len;
}

int patch_texts(Job *j, Patching *patching, PatchingProgress show, void *context, char err[ERR_LEN]) {
    char why[ERR_LEN];
    if (gpt_alloc_activations(&j->model, 1, err) != 0) return EXIT_DATA;
    int rc = patching_run(patching, &j->model, j->prompt.tokens, j->corrupted.tokens, (int)j->prompt.len, show, context,
                          why);
    if (rc != 0) return error_status(err, rc == -2 ? EXIT_USAGE : EXIT_DATA, "--patch: %s", why);
    return 0;
}

int print_patching(const Job *j, const Patching *patching, char err[ERR_LEN]) {
    patch_report_print(stdout, patching, j->vocab.chars, j->prompt.tokens, j->corrupted.tokens);
    return j->flush_stdout(err) != 0 ? EXIT_DATA : 0;
}
