#include "run_identity.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../format/safetensors.h"
#include "../model/rng.h"

void run_id_new(char id[RUN_ID_LEN]) {
    uint64_t x = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    int got = fd >= 0 && read(fd, &x, sizeof(x)) == (ssize_t)sizeof(x);
    if (fd >= 0) close(fd);
    if (!got) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = hash_mix64((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ hash_mix64((uint64_t)getpid());
    }
    snprintf(id, RUN_ID_LEN, "%016" PRIx64, x);
}

int run_id_valid(const char *text) {
    size_t n = strspn(text, "0123456789abcdef");
    return n == RUN_ID_LEN - 1 && text[n] == '\0';
}

// The options a run without train.run_id is told by (run_identity.h): first those compared
// whenever both checkpoints have them, then the schedule's, compared when both have the same
// train.schedule_start (the first key, absent before it existed: 0).
static const char *const lineage_keys[RUN_LINEAGE_KEYS] = {
    "train.schedule_start", "vocab_size", "n_layer", "n_head", "head_size", "n_embd", "block_size", "qkv_bias",
    "dropout", "train.seed", "train.batch_size", "train.val_fraction", "train.lr", "train.min_lr",
    "train.weight_decay", "train.grad_clip", "train.beta1", "train.beta2", "train.eps", "train.min_char_count",
    "train.keep_cr", "train.grow_vocab", "train.skip_unknown", "train.init_from", "train.warmup", "train.decay_steps"};
#define SCHEDULE_KEYS 2  // the last two

// Fills id from the checkpoint's metadata.
static int identity_from_meta(const SafeTensors *st, const char *path, RunIdentity *id, char err[ERR_LEN]) {
    const char *step = safetensors_meta(st, "state.step"), *run_id = safetensors_meta(st, "train.run_id");
    char *end;
    errno = 0;
    id->step = step ? strtol(step, &end, 10) : -1;
    if (!step || end == step || *end || errno || id->step < 0) {
        snprintf(err, ERR_LEN, "%s: not a checkpoint of ./train (its metadata has no step)", path);
        return -1;
    }
    if (run_id && !run_id_valid(run_id)) {
        snprintf(err, ERR_LEN, "%s: checkpoint metadata 'train.run_id' is '%.40s', not 16 hex digits", path, run_id);
        return -1;
    }
    snprintf(id->run_id, sizeof(id->run_id), "%s", run_id ? run_id : "");
    const char *fingerprint = safetensors_meta(st, "train.corpus_fingerprint");
    snprintf(id->fingerprint, sizeof(id->fingerprint), "%s", fingerprint ? fingerprint : "");
    for (int i = 0; i < RUN_LINEAGE_KEYS; i++) {
        const char *value = safetensors_meta(st, lineage_keys[i]);
        if (!value && i == 0) value = "0";  // train.schedule_start, before it was kept
        snprintf(id->lineage[i], RUN_LINEAGE_VALUE, "%s", value ? value : "");
    }
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
    if (both_ids) return 0;
    // the schedule counts when both started it at the same step; train.init_from is there or not
    int same_start = strcmp(a->lineage[0], b->lineage[0]) == 0;
    for (int i = 1; i < RUN_LINEAGE_KEYS; i++) {
        int schedule = i >= RUN_LINEAGE_KEYS - SCHEDULE_KEYS, init_from = !strcmp(lineage_keys[i], "train.init_from");
        int compared = (schedule ? same_start : 1) && (init_from || (a->lineage[i][0] && b->lineage[i][0]));
        if (!compared || strcmp(a->lineage[i], b->lineage[i]) == 0) continue;
        snprintf(why, size, "has %s '%.300s', not '%.300s' (without train.run_id, a run is told by the options that "
                 "shape its steps)", lineage_keys[i], b->lineage[i], a->lineage[i]);
        return 1;
    }
    return 0;
}
