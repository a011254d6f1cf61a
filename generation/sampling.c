// Sampling, ./generate's default job: the prompt read, the memory generating takes checked,
// the samples decoded together (generation/decoder.h) and printed, and their speed.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/utf8.h"
#include "../viewer/attention_export.h"
#include "attention_record.h"
#include "job.h"

static void write_char(FILE *f, uint32_t cp) {
    char bytes[4];
    fwrite(bytes, 1, (size_t)utf8_encode(cp, bytes), f);
}

int read_prompt(Job *j, size_t *bytes, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    *bytes = 0;
    if (o->prompt_file) {
        if (prompt_read_file(o->prompt_file, PROMPT_MAX_BYTES, &j->prompt_text, bytes, err) != 0) return EXIT_DATA;
    } else {
        j->prompt_text = strdup(o->prompt ? o->prompt : "");
        if (!j->prompt_text) return error_status(err, EXIT_DATA, "out of memory for the prompt");
        *bytes = strlen(j->prompt_text);
    }
    char what[1100];
    if (o->prompt_file)
        snprintf(what, sizeof(what), "prompt file %s", strcmp(o->prompt_file, "-") ? o->prompt_file : "stdin");
    else
        snprintf(what, sizeof(what), "the prompt");
    int rc = prompt_encode(&j->prompt, &j->vocab, j->prompt_text, *bytes, o->skip_unknown, what, err);
    if (rc != 0) return rc == -1 ? EXIT_USAGE : EXIT_DATA;
    prompt_warn_dropped(&j->prompt, "the prompt");
    return 0;
}

int check_generation_memory(const Job *j, long text_len, double prompt_bytes, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const GPTConfig *c = &j->ck.config;
    GPTMemoryPlan plan;
    gpt_memory_plan(c, o->num_samples, GPT_PLAN_GENERATION, &plan);
    gpt_memory_plan_precision(&plan, c, o->num_samples, GPT_PLAN_GENERATION, o->precision);
    plan.generation += (double)o->num_samples * text_len * sizeof(int);
    plan.text = prompt_bytes;
    int t = text_len < c->block_size ? (int)text_len : c->block_size;  // the window recorded
    char why[ERR_LEN];
    for (int i = 0; i < o->num_attention; i++)  // an image too large to write, before the model runs
        if (attention_check_size(o->attention[i], t, c->n_layer, c->n_head, why) != 0)
            return error_status(err, EXIT_USAGE, "--attention %s", why);
    if (o->num_attention)  // the copy of the attention, its vectors and head scores, and the logit lens
        plan.generation += attention_record_memory(c, t);
    double files = 0.0;  // written one after another: the largest (a .png's image) at a time
    for (int i = 0; i < o->num_attention; i++) {
        double bytes = attention_export_memory(o->attention[i], t, c->n_layer, c->n_head);
        files = bytes > files ? bytes : files;
    }
    plan.generation += files;
    char what[128];
    if (o->num_samples == 1) snprintf(what, sizeof(what), "generating %ld characters", o->max_new);
    else snprintf(what, sizeof(what), "generating %d samples of %ld characters", o->num_samples, o->max_new);
    return check_job_memory(j, &plan, c, what, err);
}

int start_samples(Job *j, const int *start, long start_len, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    DecoderConfig config = {o->num_samples, o->stride, o->use_cache, o->sampler, o->seed};
    if (decoder_init(&j->decoder, &j->model, start, start_len, o->max_new, &config, err) != 0) return EXIT_USAGE;
    for (long i = 0; i < j->prompt.len; i++) write_char(stdout, j->vocab.chars[j->prompt.tokens[i]]);
    return j->flush_stdout(err) != 0 ? EXIT_DATA : 0;
}

int decode_samples(Job *j, void (*show)(void *context, long done, long total), void *context,
                   char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    char why[ERR_LEN];
    for (long n = 0; n < o->max_new; n++) {
        const int *next = decoder_step(&j->decoder, why);
        if (!next) return error_status(err, EXIT_DATA, "%s: %s", o->checkpoint, why);
        write_char(stdout, j->vocab.chars[next[0]]);
        if (j->flush_stdout(err) != 0) return EXIT_DATA;
        show(context, n + 1, o->max_new);
    }
    return 0;
}

int print_other_samples(const Job *j, long start_len, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const Prompt *prompt = &j->prompt;
    const Decoder *d = &j->decoder;
    if (prompt->len > 0 || o->max_new > 0) printf("\n");
    for (int s = 1; s < o->num_samples; s++) {
        printf("--- sample %d of %d (seed %" PRIu64 ") ---\n", s + 1, o->num_samples, o->seed + (uint64_t)s);
        for (long i = 0; i < prompt->len; i++) write_char(stdout, j->vocab.chars[prompt->tokens[i]]);
        const int *text = decoder_text(d, s);
        for (long i = start_len; i < d->len; i++) write_char(stdout, j->vocab.chars[text[i]]);
        printf("\n");
    }
    return j->flush_stdout(err) != 0 ? EXIT_DATA : 0;  // the text ends before the messages on stderr
}

void report_speed(const GenerateOptions *o, double secs) {
    if (o->max_new == 0) return;
    long chars = o->max_new * o->num_samples;
    char precision[96] = ", precision ";
    precision_describe(o->precision, precision + strlen(precision), sizeof(precision) - strlen(precision));
    fprintf(stderr, "generated %ld characters%s in %.3f s (%.0f chars/s%s%s)\n", chars,
            o->num_samples > 1 ? " in all samples" : "", secs, secs > 0 ? chars / secs : 0.0,
            o->use_cache ? "" : ", without the cache", precision);
}
