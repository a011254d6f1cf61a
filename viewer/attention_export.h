// Attention viewer outputs: writes the attention weights of every layer and head for a
// processed text in a format picked by the file's extension.
//
//   .json  {"tokens": [one string per character], "n_layer": L, "n_head": H,
//           "attention": [L][H][t][t]}: full rows (0 above the diagonal), weights printed
//           with %.9g so parsing them back gives the same floats. Strings are JSON-escaped
//           (\" \\ \n \t ..., other control characters as \u00XX, the rest raw UTF-8).
//   .csv   header layer,head,query_pos,key_pos,query_char,key_char,weight, then one row per
//           (layer, head, query, key <= query) in that order, rows ending in LF, weight
//           with %.9g. A character field holds the real character (raw UTF-8); a comma,
//           double quote, CR or LF is quoted per RFC 4180 ("," """" and a quoted real
//           newline), so a CSV reader gets the character back unchanged.
//   .png   an RGB image: a grid of t x t heatmaps, rows = layers (0 at the top), columns =
//           heads (0 at the left), query positions down and key positions across. Each
//           cell is s x s pixels, s = clamp(min(512 / t, 2048 / (t * max(L, H))), 1, 8);
//           panels are separated by, and framed with, 3 white pixels. Colour: a
//           viridis-like map of sqrt(weight) (sqrt makes weights of a few percent visible);
//           cells above the diagonal (masked) are light grey.
//   .html  one self-contained page (inline CSS and JavaScript, no network): a layer/head
//           picker with an "all heads" mean, a heatmap with characters along both axes and
//           a lines view (queries left, keys right, a line per pair with opacity = weight).
//           The data is embedded as JSON with weights rounded to 1e-4.
#ifndef CHARGPT_ATTENTION_EXPORT_H
#define CHARGPT_ATTENTION_EXPORT_H

#include <stdint.h>

#include "../model/gpt.h"

// chars: t Unicode code points; att: (L, H, t, t) row-major softmax weights, row i holds
// the weights of keys 0..i and 0 above the diagonal. Writes `path` atomically.
// Returns 0; -1 with err when writing fails or the sizes are not positive (no file is
// left behind); -2 with err when the extension is not .json .csv .png or .html.
// Returns 0 when the extension names a format, else -2 with err (checked before any work).
int attention_check_path(const char *path, char err[ERR_LEN]);

int attention_export(const char *path, const uint32_t *chars, int t, int n_layer, int n_head,
                     const float *att, char err[ERR_LEN]);

#endif
