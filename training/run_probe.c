#include "run_probe.h"

#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/input_file.h"
#include "../data/utf8.h"
#include "../dist/dist.h"
#include "../format/atomic_file.h"
#include "../viewer/timeline.h"
#include "sample.h"

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// What the probe file at path is to a run: none there, the run's own (its train.run_id, and
// the model's sizes), another run's, or damaged (not a probe file, or a header that does not
// read whole or fit the model: moved aside by run_probe_open).
enum { PROBE_FILE_NONE, PROBE_FILE_OWN, PROBE_FILE_OTHER, PROBE_FILE_DAMAGED };

// Classifies the probe file at path (never through a symbolic link, nor waiting on a FIFO:
// common/input_file.h) for a run of run_id and model c; the run's own header goes into h.
// *records: the file holds more than a header. Returns the class, with why it is not the
// run's own in why; -1 with err when it cannot be read or is not a regular file.
static int classify_probe_file(const char *path, const char *run_id, const GPTConfig *c, ProbeHeader *h,
                               int *records, char why[ERR_LEN]) {
    *records = 0;
    int missing;
    FILE *fp = input_file_fopen(path, O_NOFOLLOW, &missing, why);
    if (!fp) return missing ? PROBE_FILE_NONE : -1;
    ProbeReader r;
    int read = probe_reader_open(&r, fp, path, why) == 0;
    fclose(fp);
    if (!read) return PROBE_FILE_DAMAGED;
    const ProbeHeader *got = &r.header;
    *records = r.size > r.offset;
    int fits = got->n_layer == c->n_layer && got->n_head == c->n_head && got->vocab_size == c->vocab_size &&
               got->block_size == c->block_size;
    int kind = strcmp(got->run_id, run_id) != 0 ? PROBE_FILE_OTHER : fits ? PROBE_FILE_OWN : PROBE_FILE_DAMAGED;
    if (kind == PROBE_FILE_OTHER) snprintf(why, ERR_LEN, "train.run_id %s", got->run_id[0] ? got->run_id : "none");
    if (kind == PROBE_FILE_DAMAGED)
        snprintf(why, ERR_LEN, "%s: a damaged probe file: its header is of another model (%d layers x %d heads, "
                 "vocabulary %d, block %d)", path, got->n_layer, got->n_head, got->vocab_size, got->block_size);
    free(r.payload);
    if (kind == PROBE_FILE_OWN) *h = r.header;
    else probe_header_free(&r.header);
    return kind;
}

// Decides whether the run continues the probe file of its --out (rp->continued), starts a new
// one (a resumed run moves a damaged one aside first, or one whose run it cannot tell, when
// its checkpoint has no train.run_id: rp->set_aside), or is refused: another run's timeline
// with records, or before a new run any other file called probe.bin, is replaced only with
// --force. Returns 0, -1 (bad data) or -2 (bad usage) with err.
static int decide_probe_file(RunProbe *rp, const TrainOptions *o, const GPTConfig *c, int run_unknown,
                             char err[ERR_LEN]) {
    char why[ERR_LEN];
    int records, kind = classify_probe_file(rp->path, o->run_id, c, &rp->header, &records, why);
    if (kind < 0) {
        snprintf(err, ERR_LEN, "%s", why);
        return -1;
    }
    rp->continued = rp->resuming && kind == PROBE_FILE_OWN;
    if (kind == PROBE_FILE_OWN && !rp->resuming) probe_header_free(&rp->header);
    int replaced = kind != PROBE_FILE_NONE && !rp->continued && (records || kind == PROBE_FILE_DAMAGED);
    if (replaced && !o->force && kind == PROBE_FILE_OTHER && rp->resuming && run_unknown) {
        snprintf(rp->damage, sizeof(rp->damage), "%s: the timeline of train.run_id %s, and the resumed checkpoint has "
                 "no train.run_id to tell whether it is its run's", rp->path, why + strlen("train.run_id "));
        rp->set_aside = "unknown";
        return 0;
    }
    if (replaced && !o->force && kind == PROBE_FILE_OTHER) {
        snprintf(err, ERR_LEN, "%s is the timeline of another run (%s%s%s): give --force to replace it, or another "
                 "--out", rp->path, why, rp->resuming ? ", not " : "", rp->resuming ? o->run_id : "");
        return -2;
    }
    if (replaced && !o->force && !rp->resuming) {
        snprintf(err, ERR_LEN, "%s is no timeline a new run can replace (%s): give --force to replace it, or another "
                 "--out", rp->path, why);
        return -2;
    }
    if (rp->resuming && kind == PROBE_FILE_DAMAGED && !o->force) {
        snprintf(rp->damage, sizeof(rp->damage), "%s", why);
        rp->set_aside = "damaged";
    }
    return 0;
}

int run_probe_prepare(RunProbe *rp, const TrainOptions *o, const GPTConfig *c, const Vocab *vocab,
                      const Dataset *ds, const char *resumed_run_id, char err[ERR_LEN]) {
    memset(rp, 0, sizeof(*rp));
    rp->file.fd = -1;
    rp->active = !o->no_probe && dist_rank() == 0;
    if (!rp->active) return 0;
    snprintf(rp->path, sizeof(rp->path), "%s/%s", o->out, PROBE_FILE);
    snprintf(rp->page_path, sizeof(rp->page_path), "%s/%s", o->out, TIMELINE_FILE);
    rp->newline = vocab_index(vocab, '\n');
    rp->sample_every = o->sample_every;
    rp->resuming = resumed_run_id != NULL;
    int rc = decide_probe_file(rp, o, c, resumed_run_id && !resumed_run_id[0], err);
    if (rc != 0 || rp->continued) {
        rp->active = rc == 0;
        return rc;
    }
    ProbeSetup setup = {o->probe[0] ? o->probe : NULL, o->sample_prompt, o->sample_chars, o->seed,
                        SAMPLE_TEMPERATURE, o->keep_cr};
    rc = probe_header_make(&rp->header, &setup, c, vocab, ds, err);
    if (rc != 0) {
        rp->active = 0;
        return rc;
    }
    snprintf(rp->header.run_id, sizeof(rp->header.run_id), "%s", o->run_id);
    rp->header.grad_clip = o->grad_clip;
    return 0;
}

double run_probe_memory(const RunProbe *rp, const GPTConfig *c) {
    return rp->active ? probe_memory(c, &rp->header) : 0.0;
}

// The lines of message saying what run_probe_open found in the file it continues.
static void describe_resume(const RunProbe *rp, const ProbeResume *resume, char *message, size_t size) {
    size_t used = 0;
    if (resume->damage)
        used += (size_t)snprintf(message, size, "%s: record %ld (at byte %llu) %s: moved the file to %s; %s keeps the "
                                 "%ld records before it", rp->path, resume->damaged_record,
                                 (unsigned long long)resume->damaged_at, resume->damage, resume->aside, rp->path,
                                 resume->kept);
    if (resume->dropped && used < size)
        used += (size_t)snprintf(message + used, size - used, "%s%s: dropped the records of steps %lld to %lld, "
                                 "written after the checkpoint was saved", used ? "\n" : "", rp->path,
                                 (long long)resume->first_dropped, (long long)resume->last_dropped);
    if (resume->torn_bytes && used < size)
        snprintf(message + used, size - used, "%s%s: cut %llu bytes of a record that a stopped run left unfinished",
                 used ? "\n" : "", rp->path, (unsigned long long)resume->torn_bytes);
}

int run_probe_open(RunProbe *rp, GPT *model, long step, char *message, size_t size, char err[ERR_LEN]) {
    message[0] = '\0';
    if (!rp->active) return 0;
    int rc;
    if (rp->continued) {
        ProbeHeader read;  // the file's header once more, now that it is the file's own
        ProbeResume resume;
        rc = probe_file_resume(&rp->file, rp->path, step, &read, &resume, err);
        if (rc == 0) {
            probe_header_free(&rp->header);
            rp->header = read;
            rp->file.header = &rp->header;
            describe_resume(rp, &resume, message, size);
        }
    } else {
        char aside[1100];
        rc = rp->set_aside ? probe_file_set_aside(rp->path, rp->set_aside, aside, sizeof(aside), err) : 0;
        if (rc == 0) rc = probe_file_create(&rp->file, rp->path, &rp->header, err);
        if (rc == 0 && rp->set_aside)
            snprintf(message, size, "%s: moved to %s; the timeline starts anew at step %ld", rp->damage, aside, step);
        else if (rc == 0 && rp->resuming)
            snprintf(message, size, "%s: the timeline starts at step %ld (the directory held no probe file of this "
                     "run)", rp->path, step);
    }
    if (rc == 0) rc = probe_init(&rp->probe, model, &rp->header, err);
    if (rc == 0) rc = probe_record_alloc(&rp->record, &rp->header, err);
    if (rc != 0) rp->active = 0;
    return rc;
}

// Whether the step gets a sample: at an evaluation, or every sample_every steps.
static int wants_sample(const RunProbe *rp, const RunProbeStep *s) {
    if (rp->header.sample_chars == 0) return 0;
    return s->evaluated || (rp->sample_every > 0 && s->step % rp->sample_every == 0);
}

int run_probe_step(RunProbe *rp, const RunProbeStep *s, char err[ERR_LEN]) {
    if (!rp->active || rp->failed || (!s->evaluated && !wants_sample(rp, s))) return 0;
    double t0 = now_seconds();
    ProbeRecord *rec = &rp->record;
    const ProbeHeader *h = &rp->header;
    rec->flags = 0;
    rec->step = s->step;
    rec->train_loss = s->train_loss, rec->val_loss = s->val_loss, rec->lr = s->lr;
    rec->grad_norm = s->grad_norm, rec->clipped = s->clipped;
    for (int g = 0; g < h->groups; g++) rec->update_ratio[g] = s->update_ratio ? s->update_ratio[g] : NAN;
    int heads = h->n_layer * h->n_head, rc = 0;
    for (int i = 0; i < heads; i++) rec->previous_token[i] = rec->induction[i] = rec->entropy[i] = NAN;
    if (s->evaluated) rc = probe_measure(&rp->probe, rec, err);
    double t1 = now_seconds();
    if (rc == 0 && wants_sample(rp, s)) {
        rc = sample_write(&rp->probe.view, h, rp->newline, rec->sample, err);
        rec->flags |= rc == 0 ? PROBE_HAS_SAMPLE : 0;
        rp->samples += rc == 0;
    }
    rp->probe_s += t1 - t0;
    rp->sample_s += now_seconds() - t1;
    if (!(rec->flags & PROBE_HAS_SAMPLE)) memset(rec->sample, 0, (size_t)h->sample_chars * sizeof(int32_t));
    if (rc == 0) rc = probe_file_append(&rp->file, rec, err);
    rp->sampled = rc == 0 && (rec->flags & PROBE_HAS_SAMPLE);
    rp->probes += rc == 0 && s->evaluated;
    rp->failed = rc != 0;
    rp->seconds += now_seconds() - t0;
    return rc;
}

void run_probe_print_sample(RunProbe *rp, FILE *fp) {
    if (!rp->sampled) return;
    rp->sampled = 0;
    const ProbeHeader *h = &rp->header;
    fprintf(fp, "sample at step %lld (seed %llu):\n  ", (long long)rp->record.step,
            (unsigned long long)h->sample_seed);
    char bytes[4];
    for (int i = 0; i < h->prompt_len + h->sample_chars; i++) {
        int id = i < h->prompt_len ? h->prompt[i] : rp->record.sample[i - h->prompt_len];
        uint32_t cp = h->vocab[id];
        fwrite(bytes, 1, (size_t)utf8_encode(cp, bytes), fp);
        if (cp == '\n') fputs("  ", fp);
    }
    fputc('\n', fp);
}

int run_probe_page(RunProbe *rp, const LossHistory *losses, const char *title, char err[ERR_LEN]) {
    if (!rp->active) return 0;
    double t0 = now_seconds();
    TimelineSummary summary;
    int rc = timeline_write(rp->page_path, rp->path, losses->points, losses->n, title, TIMELINE_MAX_RECORD_BYTES, 1, &summary,
                            err);
    rp->seconds += now_seconds() - t0;
    return rc;
}

void run_probe_describe_cost(const RunProbe *rp, char *text, size_t size) {
    double files = rp->seconds - rp->probe_s - rp->sample_s;
    snprintf(text, size, "the probe %.0f ms, the sample %.0f ms and the files %.0f ms an evaluation",
             1000.0 * rp->probe_s / (rp->probes ? rp->probes : 1), 1000.0 * rp->sample_s / (rp->samples ? rp->samples : 1),
             1000.0 * files / (rp->probes ? rp->probes : 1));
}

void run_probe_free(RunProbe *rp) {
    probe_file_close(&rp->file);
    probe_free(&rp->probe);
    probe_record_free(&rp->record);
    probe_header_free(&rp->header);
}
