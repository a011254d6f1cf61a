// GGUF, llama.cpp's model file (version 3, as ggml's docs/gguf.md lays it out), written from a
// model:
//   "GGUF" | u32 version | u64 tensor count | u64 key/value count
//   | key/values: string key, u32 value type, value
//   | tensor infos: string name, u32 dimensions, u64 size of each (the innermost first: a
//     [rows, cols] matrix is [cols, rows]), u32 type (0: F32), u64 offset of its data from
//     the data section's start
//   | zeros to a multiple of GGUF_ALIGNMENT | the data section: each tensor's floats, padded
//     with zeros to a multiple of GGUF_ALIGNMENT
// A string is a u64 length and its bytes (no NUL); an array a u32 item type, a u64 count and
// the items; every number is little-endian.
//
// chargpt's model in llama.cpp's terms (its tensor names and keys, all tensors F32):
// - learned positions: architecture "gpt2" (pre-LayerNorm blocks, learned positions, a fused
//   qkv projection with bias, tanh GELU, the output head tied to the token embedding);
// - RoPE positions: architecture "gptneox" with use_parallel_residual false (its blocks then
//   run one after the other as GPT-2's do) and rope.dimension_count = head_size, base 10000,
//   and its output head written as a copy of the token embedding (gptneox has no tied head).
//   Its rotation ("NeoX") turns the pairs (x[i], x[i + hs/2]) where chargpt turns (x[2i],
//   x[2i+1]) by the same angle, so each head's query and key rows of c_attn (weight and bias)
//   are written in the order 0, 2, 4, ..., hs-2, 1, 3, ..., hs-1: q.k, a sum over the pairs,
//   is the same;
// - no qkv bias: a bias of zeros (both architectures require one);
// - the vocabulary: tokenizer model "rwkv", whose tokens are strings matched longest first,
//   byte by byte, so with one token per character text splits into characters; unlike
//   llama.cpp's other tokenizers it names no special token (begin, end, unknown) by default,
//   which would otherwise take one of the characters' ids. A token's text is the character's
//   UTF-8 with \ written \\, and the control characters \t, \n, \r and \xNN (lowercase hex),
//   as llama.cpp's RWKV reader unescapes them. An unknown token (vocab_unknown) is named by
//   tokenizer.ggml.unknown_token_id.
// Heads that do not split n_embd (n_head x head_size != n_embd) are refused: both
// architectures take q, k and v of n_embd each.
#ifndef CHARGPT_GGUF_H
#define CHARGPT_GGUF_H

#include <stdint.h>

#include "../data/vocab.h"
#include "../model/gpt.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_VERSION 3
#define GGUF_ALIGNMENT 32
#define GGUF_TENSOR_F32 0
#define GGUF_FILE_TYPE_ALL_F32 0    // general.file_type
#define GGUF_TOKEN_TYPE_NORMAL 1    // tokenizer.ggml.token_type
#define GGUF_TOKEN_TEXT_MAX 8       // bytes of a token's text and its NUL, at most

// The value types of the key/values.
typedef enum {
    GGUF_TYPE_UINT8 = 0, GGUF_TYPE_INT8 = 1, GGUF_TYPE_UINT16 = 2, GGUF_TYPE_INT16 = 3, GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5, GGUF_TYPE_FLOAT32 = 6, GGUF_TYPE_BOOL = 7, GGUF_TYPE_STRING = 8, GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10, GGUF_TYPE_INT64 = 11, GGUF_TYPE_FLOAT64 = 12,
} GgufType;

typedef struct {
    const char *architecture;  // "gpt2" or "gptneox"
    int zero_qkv_bias;         // 1: the model has no qkv bias, zeros were written
    double bytes;              // the file's size
} GgufSummary;

// Whether GGUF carries a model of config c: 0, or -1 with err saying why not.
int gguf_check_config(const GPTConfig *c, char err[ERR_LEN]);
// The memory gguf_export takes besides the model's: its lists of tensors and tokens.
double gguf_export_memory(const GPTConfig *c);
// The architecture a model of config c is written as.
const char *gguf_architecture(const GPTConfig *c);
// The text of the token of code point cp (at most GGUF_TOKEN_TEXT_MAX bytes with its NUL).
void gguf_token_text(uint32_t cp, char text[GGUF_TOKEN_TEXT_MAX]);
// The row of c_attn (weight or bias) that row r of the written one holds: r itself, or in a
// gptneox file a query's or key's row in the order above.
int gguf_qkv_row(const GPTConfig *c, int r);

// Writes model (its vocabulary vocab, general.name `name`) to path atomically: over a file
// there when replace is 1, else only while nothing is there (ATOMIC_FILE_EXISTS when
// something is). Returns 0 with *summary, or -1 with err (nothing written).
int gguf_export(const char *path, const GPT *model, const Vocab *vocab, const char *name, int replace,
                GgufSummary *summary, char err[ERR_LEN]);

#endif
