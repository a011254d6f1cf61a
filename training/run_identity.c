#include "run_identity.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/platform.h"
#include "../format/safetensors.h"
#include "../model/rng.h"

void run_id_new(char id[RUN_ID_LEN]) {
    uint64_t x = 0;
    if (platform_random_bytes(&x, sizeof(x)) != 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = hash_mix64((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
            hash_mix64((uint64_t)platform_process_id());
    }
    snprintf(id, RUN_ID_LEN, "%016" PRIx64, x);
}

int run_id_valid(const char *text) {
    size_t n = strspn(text, "0123456789abcdef");
    return n == RUN_ID_LEN - 1 && text[n] == '\0';
}

// A metadata value, or "?" when it is absent.
static const char *meta_text(const SafeTensors *st, const char *key) {
    const char *v = safetensors_meta(st, key);
    return v ? v : "?";
}

// Fills id from the checkpoint's metadata.
static int identity_from_meta(const SafeTensors *st, const char *path, RunIdentity *id, char err[ERR_LEN]) {
    const char *step = meta_text(st, "state.step"), *run_id = meta_text(st, "train.run_id");
    char *end;
    errno = 0;
    id->step = strtol(step, &end, 10);
    if (end == step || *end || errno || id->step < 0) {
        snprintf(err, ERR_LEN, "%s: not a checkpoint of ./train (its metadata has no step)", path);
        return -1;
    }
    if (strcmp(run_id, "?") != 0 && !run_id_valid(run_id)) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'train.run_id' is '%.40s', not 16 hex digits", path, run_id);
        return -1;
    }
    snprintf(id->run_id, sizeof(id->run_id), "%s", strcmp(run_id, "?") ? run_id : "");
    const char *fingerprint = meta_text(st, "train.corpus_fingerprint");
    snprintf(id->fingerprint, sizeof(id->fingerprint), "%s", strcmp(fingerprint, "?") ? fingerprint : "");
    const char *init_from = meta_text(st, "train.init_from");
    snprintf(id->lineage, sizeof(id->lineage),
             "seed %.24s, batch %.12s, vocabulary %.12s, %.12s layers, %.12s heads of %.12s, n_embd %.12s, "
             "block %.12s%s%.400s", meta_text(st, "train.seed"), meta_text(st, "train.batch_size"),
             meta_text(st, "vocab_size"), meta_text(st, "n_layer"), meta_text(st, "n_head"),
             meta_text(st, "head_size"), meta_text(st, "n_embd"), meta_text(st, "block_size"),
             strcmp(init_from, "?") ? ", fine-tuned from " : "", strcmp(init_from, "?") ? init_from : "");
    return 0;
}

int run_identity_read(const char *path, RunIdentity *id, char err[ERR_LEN]) {
    memset(id, 0, sizeof(*id));
    SafeTensors st;
    if (safetensors_read_header(path, &st, err) != 0) return -1;
    int rc = identity_from_meta(&st, path, id, err);
    safetensors_free(&st);
    return rc;
}

int run_identity_compare(const RunIdentity *a, const RunIdentity *b, char *why, size_t size) {
    int both_ids = a->run_id[0] && b->run_id[0];
    if (both_ids && strcmp(a->run_id, b->run_id) != 0) {
        snprintf(why, size, "has train.run_id %s, not %s", b->run_id, a->run_id);
        return 1;
    }
    if (a->fingerprint[0] && b->fingerprint[0] && strcmp(a->fingerprint, b->fingerprint) != 0) {
        char have[64], want[64];
        corpus_fingerprint_describe(b->fingerprint, have, sizeof(have));
        corpus_fingerprint_describe(a->fingerprint, want, sizeof(want));
        snprintf(why, size, "was trained on another corpus (%s, not %s)", have, want);
        return 1;
    }
    if (!both_ids && strcmp(a->lineage, b->lineage) != 0) {
        snprintf(why, size, "has another seed, model or batch (%s, not %s; without train.run_id a run is told by "
                 "these)", b->lineage, a->lineage);
        return 1;
    }
    return 0;
}
