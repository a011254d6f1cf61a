// Attention viewer outputs: writes the attention weights of every layer and head for a
// processed text, and optionally what the model predicted at each position, the logit lens,
// the queries, keys and values behind the weights and what each head does, in a format
// picked by the file's extension.
//
//   .json  {"tokens": [one string per character], "n_layer": L, "n_head": H,
//           "attention": [L][H][t][t]}: full rows (0 above the diagonal), weights printed
//           with %.9g so parsing them back gives the same floats. Strings are JSON-escaped
//           (\" \\ \n \t ..., other control characters as \u00XX, the rest raw UTF-8).
//           With predictions, two more fields: "surprisal": [t] in bits, the last null
//           (its next character is not in the text), and "predictions": [t][k] of
//           [character, probability] pairs, most likely first (both %.9g). With the logit
//           lens, one more: "logit_lens": {"rows": [names: "embeddings", "block 0", ...],
//           "top": [rows][t][3] of [character, probability], "next_prob": [rows][t] and
//           "next_rank": [rows][t]} (the probability and rank, 1 the most likely, of the
//           character that came next; null at the last position). With the vectors:
//           "head_size": hs, then "query", "key", "value" and "head_output", each [L][H][t][hs]
//           (%.9g: the floats the forward made; head_output[l][h][i] = sum_j W[i][j] value[j]).
//           With the heads: "heads": {"patterns": [P names], "reach": [P], "scores":
//           [L][H][P], "label": [L][H] (a name, or null), "strength": [L][H], "importance":
//           [L][H] (bits per character, null where unknown)} (AttentionHeads). With the logit
//           attribution (analysis/attribution.h): "logit_attribution": {"target": [t characters:
//           the next one, at the last position the most likely], "rival": [t: the most likely
//           other], "next_known": [t booleans], "logit": {"total": [t], "embeddings": [t],
//           "heads": [L][H][t], "mlps": [L][t], "biases": [t]}, "difference": {the same for
//           logit(target) - logit(rival)}} (%.9g; the parts sum to the total). With the
//           heads' importance by the mean, "heads" holds "importance_mean" [L][H] and
//           "importance_mean_over" (what the means were taken over) too. With activation
//           patching (analysis/patching.h), the text being the clean one: "patching":
//           {"corrupted": [t characters], "answer_clean": character, "answer_corrupted":
//           character, "metric_clean": m, "metric_corrupted": m, "heads": [L][H], "residual":
//           [L + 1][t] (the stream entering block l, row L the one entering ln_f),
//           "residual_rows": ["embeddings", "after block 0", ...]}.
//   .csv   header layer,head,query_pos,key_pos,query_char,key_char,weight, then one row per
//           (layer, head, query, key <= query) in that order, rows ending in LF, weight
//           with %.9g. A character field holds the real character (raw UTF-8); a comma,
//           double quote, CR or LF is quoted per RFC 4180 ("," """" and a quoted real
//           newline), so a CSV reader gets the character back unchanged. Predictions
//           are not written to it.
//   .png   an RGB image: a grid of t x t heatmaps, rows = layers (0 at the top), columns =
//           heads (0 at the left), query positions down and key positions across, labelled
//           "layer l" and "head h" in a built-in bitmap font, with the characters along
//           both axes of every panel when cells are 8 pixels, and a colour legend below.
//           Each cell is s x s pixels, s = clamp(min(512 / t, 2048 / (t * max(L, H))), 1,
//           8). Colour: a viridis-like map of sqrt(weight) (sqrt makes weights of a few
//           percent visible), as the legend states; cells above the diagonal (masked) are
//           light grey. Layout in attention_formats.h (PngLayout).
//   .html  one self-contained page (inline CSS and JavaScript, no network): a model view
//           (every layer x head as a small heatmap; click one to open it), the text
//           coloured by surprisal with the top predictions on hover, the logit-lens grid
//           (layers x positions: each cell the most likely next character, coloured by the
//           probability of the one that came; its top 3 and rank on hover), a layer/head picker
//           with an "all heads" mean, a heatmap with characters along both axes and a
//           lines view (queries left, keys right, a line per pair with opacity = weight),
//           and, with the vectors, the attention math of one query (viewer/attention_math.html:
//           q, each k, the scores q.k / sqrt(hs), the causal mask, the softmax weights, each v
//           and their weighted sum), the heatmap able to show the scores instead of the weights.
//           With the heads, each head's label beside it, and its importance: how much the loss
//           on the text rises, in bits per character, when that head alone is knocked out. The URL's fragment holds the view
//           (#layer=1&head=3&query=12). The data is embedded as JSON with weights and
//           probabilities rounded to 1e-4, the vectors as exact floats (base64).
#ifndef CHARGPT_ATTENTION_EXPORT_H
#define CHARGPT_ATTENTION_EXPORT_H

#include <stdint.h>

#include "../analysis/attribution.h"
#include "../analysis/logit_lens.h"
#include "../analysis/patching.h"
#include "../model/gpt.h"

#define ATTENTION_TOP_K 5

// What the model predicted after reading the text up to and including one position.
typedef struct {
    float surprisal;                     // -log2 p(the text's next character) in bits; NaN
                                         // at the last position, whose next is unknown
    int k;                               // predictions held: min(ATTENTION_TOP_K, V)
    uint32_t top_char[ATTENTION_TOP_K];  // the k most likely next characters, most likely
    float top_prob[ATTENTION_TOP_K];     // first (ties: lower token id first)
} AttentionPrediction;

// One position's prediction from its logits (V): next is the token that followed, or -1 when
// it is unknown (surprisal NaN).
void attention_prediction(const float *logits, int V, int next, const uint32_t *vocab_chars,
                          AttentionPrediction *pred);
// Fills pred[0..t) from the model's output over tokens (t): logits (t, V) unnormalised
// log-probabilities, vocab_chars (V) the code point of each token id. Probabilities are a
// softmax in double precision, so a surprisal is finite even where a float p would be 0.
void attention_predictions(const float *logits, const int *tokens, int t, int V,
                           const uint32_t *vocab_chars, AttentionPrediction *pred);

// The logit lens over the text (analysis/logit_lens.h): rows = n_layer + 1 (the embeddings,
// then each block) of t cells, their token ids turned into characters by vocab_chars (V).
typedef struct {
    int rows;
    const LensCell *cells;         // (rows, t)
    const uint32_t *vocab_chars;   // (V)
} AttentionLens;

// The queries, keys and values the attention read, and each head's output, as the forward
// made them (gpt_qkv, gpt_attention_output): softmax(q k^T / sqrt(hs)) v of every head and
// position.
typedef struct {
    int head_size;      // hs; A = H hs
    const float *qkv;   // (L, t, 3A): position i's A queries, A keys, A values, head h's at h hs
    const float *out;   // (L, t, A): each head's sum_j W[i][j] v_j, head h's at h hs
} AttentionVectors;

// What each head does on the text (analysis/head_scores.h): its score on each pattern, and its
// label, the strongest.
typedef struct {
    int patterns;               // P
    const char *const *names;   // (P)
    const float *reach;         // (P) the score of a head that follows each pattern perfectly
    const float *chance;        // (P) the score of a head that attends evenly (untrained)
    const float *scores;        // (L, H, P)
    const int *label;           // (L, H) the strongest pattern, -1 for none
    const float *strength;      // (L, H) (score - chance) / (reach - chance) of it
    double clear;               // a label is shown as weak below this strength
    const float *importance;    // (L, H) the loss change in bits per character when the head alone
                                // is knocked out (analysis/head_importance.h); NaN where unknown
    const float *importance_mean;  // (L, H) the same with the head replaced by its mean instead
                                   // (analysis/head_means.h), or NULL
    const char *mean_over;      // what the means were taken over (with importance_mean)
} AttentionHeads;

// The direct logit attribution at each position (analysis/attribution.h), its tokens turned
// into characters by vocab_chars (V).
typedef struct {
    const LogitAttribution *split;
    const uint32_t *vocab_chars;
} AttentionAttribution;

// Activation patching (analysis/patching.h) of the text (the clean one) and a corrupted one of
// the same length, their tokens turned into characters by vocab_chars (V).
typedef struct {
    const Patching *result;
    const int *corrupted;         // (t) its tokens
    const uint32_t *vocab_chars;  // (V)
} AttentionPatching;

// Everything recorded over one processed text.
typedef struct {
    const uint32_t *chars;  // (t) code points
    int t;
    int n_layer;            // L
    int n_head;             // H
    const float *att;       // (L, H, t, t) softmax weights, row i over keys 0..i, 0 above the diagonal
    const AttentionPrediction *pred;  // (t), or NULL
    const AttentionLens *lens;        // the logit lens over the same t positions, or NULL
    const AttentionVectors *vectors;  // or NULL (.json and .html show them)
    const AttentionHeads *heads;      // or NULL (.json and .html show them)
    const AttentionAttribution *attribution;  // or NULL (.json and .html show it)
    const AttentionPatching *patching;        // or NULL (.json and .html show it)
} Attention;

// Returns 0 when the extension names a format, else -2 with err (checked before any work).
int attention_check_path(const char *path, char err[ERR_LEN]);

// Returns 0 when the file at path (by its extension) can be written for t characters over
// n_layer x n_head heads, else -2 with err: a .png whose image would be past
// ATTENTION_PNG_MAX_SIDE pixels a side (err says its size and the most characters that fit),
// checked before the model runs.
int attention_check_size(const char *path, int t, int n_layer, int n_head, char err[ERR_LEN]);

// The memory writing path (by its extension) takes for t characters over n_layer x n_head
// heads, besides the weights themselves: the .png's image (its pixels, their rows as PNG
// filters them and the compressed copy), 0 for the formats written as they are made (.json,
// .csv, .html) and for an image too large to write (refused by attention_check_size).
double attention_export_memory(const char *path, int t, int n_layer, int n_head);

// Writes a to `path` atomically: over a file there when replace is 1, else only while nothing
// is there (format/atomic_file.h). Returns 0; -1 with err when writing fails or the sizes are
// not positive (no file is left behind); -2 with err when the extension is not .json .csv .png
// or .html, or (replace 0) when path exists.
int attention_export(const char *path, const Attention *a, int replace, char err[ERR_LEN]);

#endif
