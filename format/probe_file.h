// The probe file (probe.bin in a run's directory): what ./train measured of its model at each
// evaluation (training/probe.h), and the samples it wrote, for the timeline page
// (viewer/timeline.h). It is appended to as the run goes and kept across --resume.
//
// Layout, every number little-endian (version 3; versions 1 and 2 below):
//   "CGPTPRB3" (8 bytes), then the header as a frame, then the records, each a frame.
//   A frame is u32 length, that many bytes of payload, u32 CRC-32 of the payload.
//   Header payload: u32 n_layer, n_head, vocab_size, block_size, groups, probe_len t,
//     repeat_len r, prompt_len, sample_chars S, head_size hs, vector_len m, vector_repeat_len n;
//     u64 sample_seed; f32 temperature, grad_clip; f32 reach[PROBE_PATTERNS];
//     run_id (RUN_ID_LEN bytes, NUL-padded);
//     source (PROBE_SOURCE_LEN bytes, NUL-padded); u32 vocab[V] (code points);
//     i32 passage[t + 1]; i32 repeated[r]; i32 prompt[prompt_len];
//     group names (groups x PROBE_GROUP_NAME bytes, NUL-padded).
//   Record payload (ProbeRecord's fields in this order), first its light part:
//     u32 flags; i64 step; f32 train_loss, val_loss, lr, grad_norm, clipped;
//     f32 update_ratio[groups]; i32 sample[S]; f32 previous_token[L H], induction[L H],
//     entropy[L H], first_character[L H], same_character[L H], word_start[L H], last_space[L H],
//     importance[L H];
//   then, when flags has PROBE_HAS_PROBE, its heavy part:
//     f32 surprisal[t]; (i32 top[PROBE_TOP], f32 top_prob[PROBE_TOP]) per position [t];
//     (i32 lens_top[3], f32 lens_prob[3], f32 next_prob, i32 next_rank) per cell [(L + 1) t];
//     u8 att_passage[L H t(t+1)/2]; u8 att_repeated[L H r(r+1)/2];
//     f32 vectors_passage[L m 3A]; f32 vectors_repeated[L n 3A] (A = H hs).
//   So a record is exactly probe_light_bytes or probe_record_bytes long: a reader knows every
//   size from the header, and anything else is damage.
//   Version 2 ("CGPTPRB2") is version 3 without the importance (read as NaN); version 1
//   ("CGPTPRB1", files of earlier runs) has the header's first nine sizes only (no
//   head_size, m, n) and no reach, the light part up to entropy, and the heavy part up to
//   att_repeated; it
//   is read as it is (the fields it lacks: NaN scores, no vectors), and a resumed run appends
//   to such a file in its own layout.
//
// The vectors are the queries, keys and values of the first m positions of the passage and n
// of the repeated run, every layer's as its forward made them: for each layer, position and
// head h, q at [h hs, (h + 1) hs), k at A + h hs and v at 2A + h hs of the position's 3A
// floats (gpt_qkv). m and n are chosen when the run starts so that a record keeps at most
// PROBE_VECTOR_BYTES of them (probe.h).
// Attention weights are kept as round(255 sqrt(w)) of each head's lower triangle, row by row:
// a weight of 1e-4 is still 3, and near 1 a step is 0.008. Missing numbers (no validation at
// step 0, no gradient before the first step, a score a short probe cannot give) are NaN.
//
// A run appends a record with one write and an fsync, after cutting whatever follows the last
// whole record. kill -9 during the write leaves a torn tail: a frame the file ends inside. A
// reader stops there, or at the first damaged frame (one whose length fits no record, or that
// fails its CRC, or whose step is not after the one before), and reports the bytes it ignored
// and which it was. A resumed run cuts a torn tail, and the records after its step; a file
// damaged before its tail is never cut: it is moved aside (probe_file_set_aside) and its
// whole records up to the damage are copied into a new file (suffix "damaged").
#ifndef CHARGPT_PROBE_FILE_H
#define CHARGPT_PROBE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/errors.h"

#define PROBE_FILE_MAGIC "CGPTPRB3"      // version 3
#define PROBE_FILE_MAGIC_V2 "CGPTPRB2"   // version 2
#define PROBE_FILE_MAGIC_V1 "CGPTPRB1"   // version 1
#define PROBE_TOP 5               // predictions kept per position
#define PROBE_LENS_TOP 3          // logit-lens predictions kept per cell
#define PROBE_GROUP_NAME 32       // bytes of a parameter group's name, NUL included
#define PROBE_PATTERNS 6          // the head patterns scored (analysis/head_scores.h's, in its order)
#define PROBE_SOURCE_LEN 256      // bytes of the passage's source, NUL included
#define PROBE_RUN_ID_LEN 17       // training/run_state.h's RUN_ID_LEN
// limits a header must keep (a reader refuses more before allocating anything)
#define PROBE_MAX_LAYERS 1024
#define PROBE_MAX_HEADS 1024
#define PROBE_MAX_VOCAB (1 << 21)
#define PROBE_MAX_BLOCK 65536
#define PROBE_MAX_HEAD_SIZE 65536
#define PROBE_MAX_GROUPS 64
#define PROBE_MAX_SAMPLE 65536
#define PROBE_MAX_RECORD (1u << 30)  // bytes of one record

enum { PROBE_HAS_SAMPLE = 1, PROBE_HAS_PROBE = 2 };

typedef struct {
    int version;         // the layout: 1 or 2 for a file of an earlier one (read, and appended to,
                         // as it is); a header made for a new file is written as version 3
    int n_layer, n_head, vocab_size, block_size;
    int groups;          // parameter groups of the update-to-weight ratios
    int probe_len;       // t: positions probed (the passage holds t + 1 tokens: inputs and next)
    int repeat_len;      // r = 2n: the repeated random sequence of the induction score (0: none)
    int prompt_len;      // the samples' prompt (0: they start from a newline, as ./generate's)
    int sample_chars;    // S: characters of each sample (0: no samples)
    int head_size;       // hs (0 in version 1)
    int vector_len;      // m: positions of the passage whose queries, keys and values a record keeps
    int vector_repeat_len;  // n: those of the repeated sequence
    uint64_t sample_seed;
    float temperature;
    float grad_clip;
    // the score of a head following each pattern perfectly on the text the probe scores it on
    // (previous token, first character, word start and last space on the passage, induction and
    // same character on the repeated sequence), in [0, 1]: what head_label divides by (0 in
    // version 1)
    float reach[PROBE_PATTERNS];
    char run_id[PROBE_RUN_ID_LEN];
    char source[PROBE_SOURCE_LEN];  // where the passage comes from, in words
    uint32_t *vocab;     // (V) each token's code point
    int32_t *passage;    // (t + 1)
    int32_t *repeated;   // (r)
    int32_t *prompt;     // (prompt_len)
    char (*group_names)[PROBE_GROUP_NAME];  // (groups)
} ProbeHeader;

// Allocates the header's arrays for its sizes (set first). Returns 0, or -1 with err.
int probe_header_alloc(ProbeHeader *h, char err[ERR_LEN]);
void probe_header_free(ProbeHeader *h);

typedef struct {
    uint32_t flags;       // PROBE_HAS_SAMPLE, PROBE_HAS_PROBE
    int64_t step;
    float train_loss;     // of the step's report (the mean since the last one)
    float val_loss;
    float lr;
    float grad_norm;      // the step's gradient norm before clipping
    float clipped;        // 1 when it was clipped, 0 when not
    float *update_ratio;  // (groups) |update| / |weights| of each parameter group's last update
    int32_t *sample;      // (S) the sample's characters after its prompt
    float *previous_token, *induction, *entropy;  // (L, H) analysis/head_scores.h
    float *first_character, *same_character, *word_start, *last_space;  // (L, H); NaN in version 1
    float *importance;    // (L, H) the passage's loss change in bits per character when that head
                          // alone is knocked out (analysis/head_importance.h); NaN before version 3
    // heavy part
    float *surprisal;     // (t) bits of passage[i + 1] after reading passage[0..i]
    int32_t *top;         // (t, PROBE_TOP) the most likely next tokens (-1 past the vocabulary)
    float *top_prob;      // (t, PROBE_TOP)
    int32_t *lens_top;    // (L + 1, t, PROBE_LENS_TOP) the logit lens (analysis/logit_lens.h)
    float *lens_prob;     // (L + 1, t, PROBE_LENS_TOP)
    float *lens_next_prob;   // (L + 1, t)
    int32_t *lens_next_rank; // (L + 1, t)
    uint8_t *att_passage;    // (L, H, t(t+1)/2) round(255 sqrt(w))
    uint8_t *att_repeated;   // (L, H, r(r+1)/2)
    float *vectors_passage;  // (L, m, 3A) queries, keys and values, as the forward's qkv rows
    float *vectors_repeated; // (L, n, 3A)
    void *memory;
} ProbeRecord;

// Bytes of a record's payload: its light part, and the whole record (heavy part included).
size_t probe_light_bytes(const ProbeHeader *h);
size_t probe_record_bytes(const ProbeHeader *h);
// Allocates a record's arrays for the header's sizes. Returns 0, or -1 with err.
int probe_record_alloc(ProbeRecord *r, const ProbeHeader *h, char err[ERR_LEN]);
void probe_record_free(ProbeRecord *r);
// A weight as stored, and back.
uint8_t probe_quantize(float w);
float probe_dequantize(uint8_t q);

// Writing, for ./train: the header is written first (atomically, replacing any file), then
// records are appended.
typedef struct {
    int fd;
    char path[1100];
    ProbeHeader *header;
    uint64_t end;          // offset after the last whole record
    int64_t last_step;     // of the last record, -1 before the first
    uint8_t *buffer;       // room for one encoded record
} ProbeFile;

// Starts a new probe file at path (atomic_file.h: no one ever sees half a header) and opens
// it for appending. Returns 0, or -1 with err.
int probe_file_create(ProbeFile *pf, const char *path, ProbeHeader *header, char err[ERR_LEN]);
// Moves the file at path aside, to the first free name of <path>.<suffix>, <path>.<suffix>.2,
// ... (never replacing a file), written into aside. Returns 0, or -1 with err.
int probe_file_set_aside(const char *path, const char *suffix, char *aside, size_t size, char err[ERR_LEN]);

// What probe_file_resume found.
typedef struct {
    long kept;             // records kept (steps up to the resumed one)
    long dropped;          // whole records after the resumed step, cut
    int64_t first_dropped, last_dropped;
    uint64_t torn_bytes;   // a torn tail, cut
    const char *damage;    // NULL, or what was wrong with the first damaged record:
    long damaged_record;   //   its number (1 is the first record)
    uint64_t damaged_at;   //   and byte offset;
    char aside[1100];      //   the file was moved here, its records before it copied back
} ProbeResume;
// Opens the probe file at path (never through a symbolic link) for a run resuming at `step`:
// reads its header into *header (allocated; the caller frees it), checks its records, cuts
// those after `step` and a torn tail, and opens it for appending; a damaged record sets the
// file aside first (above). Returns 0; 1 when there is no file at path; -1 with err when it
// cannot be read or its header is damaged (the caller decides whether to start anew).
int probe_file_resume(ProbeFile *pf, const char *path, long step, ProbeHeader *header, ProbeResume *resume,
                      char err[ERR_LEN]);
// Appends a record (flags PROBE_HAS_PROBE: the whole of it; else its light part), whose step
// must be after the last one, with one write and an fsync. A failed write cuts what it left.
// Returns 0, or -1 with err.
int probe_file_append(ProbeFile *pf, const ProbeRecord *r, char err[ERR_LEN]);
void probe_file_close(ProbeFile *pf);

// Reading, for the timeline page and the tests: one record at a time, so that memory is one
// record's whatever the file's length.
typedef struct {
    FILE *fp;
    char name[1100];       // for messages
    ProbeHeader header;
    uint8_t *payload;      // the last record's payload as read (light or whole)
    size_t payload_len;
    uint64_t offset;       // after the last whole record
    uint64_t size;         // of the file
    uint64_t torn_bytes;   // set when reading stopped at a torn tail or a damaged record: the rest
    const char *damage;    // NULL at a torn tail (or none); else what is wrong with the record at offset
    int64_t last_step;
    long records;
} ProbeReader;

// Reads and checks the header from fp (read from its start; the reader does not close it).
// Returns 0, or -1 with err naming `name` (not a probe file, a damaged header, sizes past the
// limits above or past what the file holds).
int probe_reader_open(ProbeReader *r, FILE *fp, const char *name, char err[ERR_LEN]);
// The next record into rec (allocated by probe_record_alloc for r's header): 1 when there is
// one, 0 at the end of the file or of its whole records (torn_bytes then says what was left
// after them, and damage whether they end at a damaged record), -1 with err when the file
// cannot be read.
int probe_reader_next(ProbeReader *r, ProbeRecord *rec, char err[ERR_LEN]);
void probe_reader_close(ProbeReader *r);

#endif
