// The circuits file: the JSON document described in circuits_export.h, written alone (.json)
// or into the fixed page viewer/circuits_page.html in place of its @DATA@ mark (.html, with
// its title in place of @TITLE@), where every < of a string is escaped so that no text can
// end the page's <script> element.
#include "circuits_export.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../common/platform.h"
#include "../format/atomic_file.h"
#include "attention_formats.h"
#include "markup.h"

static const char circuits_page[] =
#include "circuits_page.inc"
    ;


// n doubles as [x,...]
static void write_doubles(FILE *fp, const double *x, int n) {
    fputc('[', fp);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', fp);
        viewer_write_number(fp, x[i]);
    }
    fputc(']', fp);
}

// count matrices of rows x cols floats, nested [count][rows][cols] with `outer` matrices to an
// outer bracket ([L][H][rows][cols] with outer = H), a row a line
static void write_matrices(FILE *fp, const float *x, int count, int outer, int rows, int cols) {
    char number[24];
    fputc('[', fp);
    for (int m = 0; m < count; m++) {
        fputs(m == 0 ? "[[" : m % outer == 0 ? "]],\n[[" : "],\n[", fp);
        for (int r = 0; r < rows; r++) {
            fputs(r ? ",\n[" : "[", fp);
            for (int k = 0; k < cols; k++) {
                float v = x[((size_t)m * rows + r) * cols + k];
                if (k) fputc(',', fp);
                if (isfinite(v)) fwrite(number, 1, (size_t)viewer_append_float(number, v), fp);
                else fputs("null", fp);
            }
            fputc(']', fp);
        }
    }
    fputs("]]]", fp);
}

// [L][H] of per-head doubles
static void write_per_head(FILE *fp, const char *key, const double *x, int L, int H) {
    fprintf(fp, ",\n\"%s\": [", key);
    for (int l = 0; l < L; l++) {
        if (l) fputc(',', fp);
        write_doubles(fp, x + (size_t)l * H, H);
    }
    fputc(']', fp);
}

// "composition": {"q": [L][H][L][H], "k": ..., "v": ...}, a head's row of scores a line
static void write_composition(FILE *fp, const Circuits *c) {
    const double *kinds[3] = {c->composition_q, c->composition_k, c->composition_v};
    const int L = c->n_layer, H = c->n_head;
    fputs(",\n\"composition\": {", fp);
    for (int k = 0; k < 3; k++) {
        fprintf(fp, "%s\"%c\": [", k ? ",\n" : "", "qkv"[k]);
        for (int a = 0; a < L * H; a++) {
            fputs(a == 0 ? "[[" : a % H == 0 ? "]],\n[[" : "],\n[", fp);
            for (int l = 0; l < L; l++) {
                if (l) fputc(',', fp);
                write_doubles(fp, kinds[k] + ((size_t)a * L + l) * H, H);
            }
        }
        fputs("]]]", fp);
    }
    fputc('}', fp);
}

// The JSON document; html_safe escapes the characters as the page needs.
static void write_json(FILE *fp, const CircuitsFile *f, int html_safe) {
    const Circuits *c = f->circuits;
    const int L = c->n_layer, H = c->n_head, V = c->vocab_size, T = c->positions;
    char text[JSON_CHAR_MAX];
    fputs("{\"tokens\": [", fp);
    for (int v = 0; v < V; v++) {
        if (v) fputc(',', fp);
        fwrite(text, 1, (size_t)viewer_append_json_char(text, f->vocab_chars[v], html_safe), fp);
    }
    fprintf(fp, "],\n\"n_layer\": %d, \"n_head\": %d, \"vocab_size\": %d, \"n_embd\": %d, \"head_size\": %d, "
            "\"block_size\": %d", L, H, V, f->n_embd, f->head_size, f->block_size);
    write_per_head(fp, "ov_copying_score", c->ov_copying_score, L, H);
    write_per_head(fp, "ov_copying_score_raw", c->ov_copying_score_raw, L, H);
    write_per_head(fp, "ov_diagonal_share", c->ov_diagonal_share, L, H);
    write_per_head(fp, "ov_diagonal_share_raw", c->ov_diagonal_share_raw, L, H);
    write_composition(fp, c);
    fputs(",\n\"composition_baseline\": ", fp);
    viewer_write_number(fp, c->composition_baseline);
    fprintf(fp, ", \"composition_baseline_samples\": %d, \"composition_baseline_seed\": %llu", COMPOSITION_BASELINE_SAMPLES,
            (unsigned long long)c->baseline_seed);
    fputs(",\n\"ov_circuit\": ", fp);
    write_matrices(fp, c->ov, L * H, H, V, V);
    fputs(",\n\"ov_circuit_raw\": ", fp);
    write_matrices(fp, c->ov_raw, L * H, H, V, V);
    fputs(",\n\"qk_characters\": ", fp);
    write_matrices(fp, c->qk_characters, L * H, H, V, V);
    fputs(",\n\"qk_characters_raw\": ", fp);
    write_matrices(fp, c->qk_characters_raw, L * H, H, V, V);
    for (int raw = 0; raw < 2; raw++) {
        fputs(raw ? ",\n\"qk_positions_raw\": " : ",\n\"qk_positions\": ", fp);
        if (T > 0) write_matrices(fp, raw ? c->qk_positions_raw : c->qk_positions, L * H, H, T, T);
        else fputs("null", fp);
    }
    fputs("}\n", fp);
}

// The page with the document in place of @DATA@ and the title in place of @TITLE@.
static void write_page(FILE *fp, const CircuitsFile *f) {
    const char *at = circuits_page;
    for (const char *mark; (mark = strchr(at, '@'));) {
        fwrite(at, 1, (size_t)(mark - at), fp);
        if (strncmp(mark, "@DATA@", 6) == 0) write_json(fp, f, 1), at = mark + 6;
        else if (strncmp(mark, "@TITLE@", 7) == 0) markup_write_text(fp, f->title), at = mark + 7;
        else fputc('@', fp), at = mark + 1;
    }
    fputs(at, fp);
}

static int is_html(const char *path) { return strcasecmp(platform_path_extension(path), "html") == 0; }

int circuits_check_path(const char *path, char err[ERR_LEN]) {
    if (is_html(path) || strcasecmp(platform_path_extension(path), "json") == 0) return 0;
    snprintf(err, ERR_LEN, "--circuits %s: unknown extension (use .json or .html)", path);
    return -2;
}

int circuits_export(const char *path, const CircuitsFile *f, int replace, char err[ERR_LEN]) {
    if (circuits_check_path(path, err) != 0) return -2;
    AtomicFile file;
    if (atomic_file_open(&file, path, err) != 0) return -1;
    if (is_html(path)) write_page(file.fp, f);
    else write_json(file.fp, f, 0);
    return replace ? atomic_file_commit(&file, err) : atomic_file_commit_new(&file, err);
}
