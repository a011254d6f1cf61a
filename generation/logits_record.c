#include "logits_record.h"

#include <stdio.h>
#include <strings.h>

#include "../common/finite.h"
#include "../common/platform.h"
#include "../format/atomic_file.h"
#include "../viewer/attention_formats.h"
#include "job.h"

int logits_check_path(const char *path, char err[ERR_LEN]) {
    if (strcasecmp(platform_path_extension(path), "json") == 0) return 0;
    snprintf(err, ERR_LEN, "--logits %s: the logits are written as JSON: name a .json file", path);
    return -1;
}

static void write_json(FILE *fp, const float *logits, const int *window, int t, const Vocab *vocab) {
    fputs("{\"tokens\": [", fp);
    for (int i = 0; i < t; i++) fprintf(fp, "%s%d", i ? ", " : "", window[i]);
    fputs("],\n\"chars\": [", fp);
    for (int i = 0; i < t; i++) {
        char ch[JSON_CHAR_MAX];
        int n = viewer_append_json_char(ch, vocab->chars[window[i]], 0);
        fprintf(fp, "%s%.*s", i ? ", " : "", n, ch);
    }
    fputs("],\n\"logits\": [", fp);
    for (int i = 0; i < t; i++) {
        fputs(i ? ",\n[" : "\n[", fp);
        for (int v = 0; v < vocab->size; v++) fprintf(fp, "%s%.9g", v ? ", " : "", logits[(size_t)i * vocab->size + v]);
        fputc(']', fp);
    }
    fputs("]}\n", fp);
}

int logits_record(GPT *model, const Vocab *vocab, const int *text, long len, const char *path, int replace,
                  char err[ERR_LEN]) {
    const GPTConfig *c = &model->config;
    int t = len < c->block_size ? (int)len : c->block_size;
    const int *window = text + len - t;
    gpt_forward(model, window, NULL, 1, t, NULL);
    const float *logits = model->acts.logits;
    long bad = first_nonfinite(logits, (size_t)t * c->vocab_size);
    if (bad >= 0) {
        snprintf(err, ERR_LEN, "--logits: the model's logits at position %ld of the text are not finite (%g for token "
                 "%ld): its weights overflow float", bad / c->vocab_size, logits[bad], bad % c->vocab_size);
        return EXIT_DATA;
    }
    AtomicFile f;
    if (atomic_file_open(&f, path, err) != 0) return EXIT_DATA;
    write_json(f.fp, logits, window, t, vocab);
    int rc = replace ? atomic_file_commit(&f, err) : atomic_file_commit_new(&f, err);
    return rc == 0 ? 0 : rc == ATOMIC_FILE_EXISTS ? EXIT_USAGE : EXIT_DATA;
}

// ----------------------------------------------------------------------------
// ./generate --logits: the job's stage (generation/job.h)

int record_logits(Job *j, const int *text, long len, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    int status = logits_record(&j->model, &j->vocab, text, len, o->logits, o->force, err);
    if (status != 0) return status;
    const GPTConfig *c = &j->model.config;
    fprintf(stderr, "logits of %ld characters written to %s\n", len < c->block_size ? len : (long)c->block_size,
            o->logits);
    return 0;
}
