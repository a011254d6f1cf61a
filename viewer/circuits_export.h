// --circuits FILE: the circuits of a model's weights (analysis/circuits.h) as a .json file or a
// self-contained .html page that draws them (viewer/circuits_page.html, the same JSON inside).
//
//   {"tokens": [V strings: the vocabulary], "n_layer": L, "n_head": H, "vocab_size": V,
//    "n_embd": C, "head_size": hs, "block_size": T,
//    "ov_copying_score": [L][H], "ov_copying_score_raw": [L][H],
//    "ov_diagonal_share": [L][H], "ov_diagonal_share_raw": [L][H],
//    "composition": {"q": [L][H][L][H], "k": ..., "v": ...}, "composition_baseline": x,
//    "composition_baseline_samples": n, "composition_baseline_seed": s,
//    "ov_circuit": [L][H][V][V], "ov_circuit_raw": [L][H][V][V],
//    "qk_characters": [L][H][V][V], "qk_characters_raw": [L][H][V][V],
//    "qk_positions": [L][H][T][T] or null (RoPE), "qk_positions_raw": the same}
// (the extended circuits under the plain names, as analysis/circuits.h defines them).
// composition[l1][h1][l2][h2] is head (l1, h1)'s into head (l2, h2), 0 unless l2 > l1. Numbers
// with %.9g (null where not finite: a circuit of 0 has no copying score); a matrix row a line.
#ifndef CHARGPT_CIRCUITS_EXPORT_H
#define CHARGPT_CIRCUITS_EXPORT_H

#include <stdint.h>

#include "../analysis/circuits.h"

// What the file describes besides the circuits.
typedef struct {
    const Circuits *circuits;
    const uint32_t *vocab_chars;  // (V) the character of each token
    int n_embd, head_size, block_size;
    const char *title;            // the page's (the checkpoint's path)
} CircuitsFile;

// Returns 0 when path ends in .json or .html, else -2 with err.
int circuits_check_path(const char *path, char err[ERR_LEN]);
// Writes f to path atomically: over a file there when replace is 1, else only while nothing is
// there (format/atomic_file.h). Returns 0; -1 with err when writing fails; -2 with err for an
// extension that is not .json or .html or (replace 0) a path that exists.
int circuits_export(const char *path, const CircuitsFile *f, int replace, char err[ERR_LEN]);

#endif
