// The bf16 kernels with AVX512_BF16 (matmul_kernels.h): the 14x32 register tile of
// backend_avx512.c, fed pairs of bf16 to vdpbf16ps, which adds the two products of a pair
// into each float lane; and the same tile on AMX's tile registers (below). Built with the
// AVX512_BF16 and AMX instructions enabled (the Makefile's ISA_FLAGS_*), and used only by the
// avx512_bf16 and avx512_amx backends, on CPUs that have them.
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "../common/clock.h"

#include "backend.h"

#define MR AVX512_MR
#define NR AVX512_NR

// The tile with the number of 16-column vectors (nv, 1 or 2) fixed at compile time, and A's
// layout: row i's pair p at a + i*a_row + p*a_step (packed: a_row 2, a_step 2*MR; rows as
// they lie: a_row lda, a_step 2).
static inline __attribute__((always_inline)) void tile_body(
    int kp, const bf16 *a, long a_row, const long a_step, const bf16 *b, float *c, long ldc, const float *start_row,
    const int nv) {
    __m512 acc[MR][2];
#pragma GCC unroll 14
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < nv; v++)
            acc[i][v] = _mm512_loadu_ps(start_row ? start_row + 16 * v : c + i * ldc + 16 * v);
    for (int p = 0; p < kp; p++) {
        __m512bh bk[2];  // pair p of 16 columns each
        for (int v = 0; v < nv; v++) bk[v] = (__m512bh)_mm512_loadu_si512(b + 32 * v);
#pragma GCC unroll 14
        for (int i = 0; i < MR; i++) {
            int pair;  // A(i, 2p) and A(i, 2p + 1), broadcast to every lane
            memcpy(&pair, a + i * a_row, sizeof(pair));
            __m512bh ai = (__m512bh)_mm512_set1_epi32(pair);
            for (int v = 0; v < nv; v++) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], ai, bk[v]);
        }
        a += a_step;
        b += 2 * NR;
    }
#pragma GCC unroll 14
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < nv; v++) _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
}

static void tile(int kp, const bf16 *a, const bf16 *b, float *c, long ldc, const float *start_row, int half) {
    if (half) tile_body(kp, a, 2, 2 * MR, b, c, ldc, start_row, 1);
    else tile_body(kp, a, 2, 2 * MR, b, c, ldc, start_row, 2);
}

static void tile_rows(int kp, const bf16 *a, long lda, const bf16 *b, float *c, long ldc, const float *start_row,
                      int half) {
    if (half) tile_body(kp, a, lda, 2, b, c, ldc, start_row, 1);
    else tile_body(kp, a, lda, 2, b, c, ldc, start_row, 2);
}

static void convert(bf16 *dst, const float *src, long n) {
    long i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + i + 16), _mm512_loadu_ps(src + i));
        _mm512_storeu_si512(dst + i, (__m512i)h);
    }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + i));
        _mm256_mask_storeu_epi16(dst + i, m, (__m256i)h);
    }
}

// v[r] (16 words each) = v[c][r] for r, c < 16: unpacking pairs of rows, then pairs of
// those, interleaves the words within each 128-bit lane; exchanging lanes finishes it.
static inline __attribute__((always_inline)) void transpose_16x16(__m512i v[16]) {
    __m512i t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
    }
    // u[4i + j], lane L: word 4L + j of rows 4i .. 4i + 3
    for (int i = 0; i < 4; i++) {
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    // word 4L + j of all rows: lane L of u[j], u[4 + j], u[8 + j], u[12 + j]
    for (int j = 0; j < 4; j++) {
        __m512i x0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x44), x1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xEE);
        __m512i x2 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x44), x3 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xEE);
        v[j] = _mm512_shuffle_i32x4(x0, x2, 0x88);
        v[4 + j] = _mm512_shuffle_i32x4(x0, x2, 0xDD);
        v[8 + j] = _mm512_shuffle_i32x4(x1, x3, 0x88);
        v[12 + j] = _mm512_shuffle_i32x4(x1, x3, 0xDD);
    }
}

// 16 rows by 16 pairs at a time: the pairs of a row are its 32-bit words.
static void pack_pairs(bf16 *dst, int width, int count, const bf16 *src, long ld, int pairs) {
    for (int r0 = 0; r0 < width; r0 += 16) {
        int rows = width - r0 < 16 ? width - r0 : 16;
        __mmask16 store = (__mmask16)((1u << rows) - 1);
        for (int p = 0; p < pairs; p += 16) {
            int n = pairs - p < 16 ? pairs - p : 16;
            __mmask16 load = (__mmask16)((1u << n) - 1);
            __m512i v[16];
            for (int r = 0; r < 16; r++)
                v[r] = r0 + r < count ? _mm512_maskz_loadu_epi32(load, src + (r0 + r) * ld + 2 * p) : _mm512_setzero_si512();
            transpose_16x16(v);
            for (int t = 0; t < n; t++) _mm512_mask_storeu_epi32(dst + ((long)(p + t) * width + r0) * 2, store, v[t]);
        }
    }
}

// R rows of w dotted with x, the sums as matmul_kernels.h gives them: two 16-lane
// accumulators over 64-element steps, a masked tail, then the fixed reduction.
static inline __attribute__((always_inline)) void dot_rows_body(
    float *out, const bf16 *x, const bf16 *w, const float *bias, int C, const int R) {
    __m512 acc0[4], acc1[4];
    for (int r = 0; r < R; r++) acc0[r] = acc1[r] = _mm512_setzero_ps();
    int i = 0;
    for (; i + 64 <= C; i += 64) {
        __m512bh x0 = (__m512bh)_mm512_loadu_si512(x + i), x1 = (__m512bh)_mm512_loadu_si512(x + i + 32);
        for (int r = 0; r < R; r++) {
            const bf16 *wr = w + (long)r * C + i;
            acc0[r] = _mm512_dpbf16_ps(acc0[r], (__m512bh)_mm512_loadu_si512(wr), x0);
            acc1[r] = _mm512_dpbf16_ps(acc1[r], (__m512bh)_mm512_loadu_si512(wr + 32), x1);
        }
    }
    if (i < C) {  // up to 63 elements left: the first 32 (masked) into acc0, the rest into acc1
        int left = C - i;
        __mmask32 m0 = left >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << left) - 1);
        __mmask32 m1 = left <= 32 ? 0 : (__mmask32)((1u << (left - 32)) - 1);
        __m512bh x0 = (__m512bh)_mm512_maskz_loadu_epi16(m0, x + i);
        __m512bh x1 = (__m512bh)_mm512_maskz_loadu_epi16(m1, x + i + 32);
        for (int r = 0; r < R; r++) {
            const bf16 *wr = w + (long)r * C + i;
            acc0[r] = _mm512_dpbf16_ps(acc0[r], (__m512bh)_mm512_maskz_loadu_epi16(m0, wr), x0);
            acc1[r] = _mm512_dpbf16_ps(acc1[r], (__m512bh)_mm512_maskz_loadu_epi16(m1, wr + 32), x1);
        }
    }
    for (int r = 0; r < R; r++) {
        __m512 s16 = _mm512_add_ps(acc0[r], acc1[r]);
        __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(s16), _mm512_extractf32x8_ps(s16, 1));
        __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
        __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
        float sum = _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
        out[r] = bias ? bias[r] + sum : sum;
    }
}

static void dot_rows(float *out, const bf16 *x, const bf16 *w, const float *bias, int C,
                                 int o0, int o1) {
    int o = o0;
    for (; o + 4 <= o1; o += 4) dot_rows_body(out + o, x, w + (long)o * C, bias ? bias + o : NULL, C, 4);
    for (; o < o1; o++) dot_rows_body(out + o, x, w + (long)o * C, bias ? bias + o : NULL, C, 1);
}

const Bf16Kernels bf16_avx512_kernels = {"vdpbf16ps", tile, convert, pack_pairs, dot_rows, .sums = BF16_SUMS_VDPBF16PS,
                                         .tile_rows = tile_rows};

// ---- the same tile on AMX (Advanced Matrix Extensions: Sapphire Rapids and later)
// TDPBF16PS multiplies a tile of A, rows of AMX_PAIRS pairs, by a tile of B, AMX_PAIRS pairs
// of 16 columns each, into a tile of floats: 16 pairs of each element's sum in one instruction
// (a plain AMX product of small's c_fc shape ran 7.3 times the fp32 FMA peak of an Emerald
// Rapids core: docs/benchmarks.md). The tile here takes
// the pair panels of the vdpbf16ps tile as they are: a block of AMX_PAIRS pairs of B's panel is
// already a B tile (the pairs of 16 columns 128 bytes apart); A's block has the MR rows of each
// pair together, so it is transposed in registers (transpose_16x16) into a tile of MR rows:
// once per product for A packed whole (the linear layers: lay_out_a, with which small's bf16
// products ran 1.2x to 1.8x as fast, docs/benchmarks.md), else by each tile.
// Each element gets c, then each block of 16 pairs as TDPBF16PS adds it (one pair: c + the
// pair's sum, each rounded to nearest; more: not in vdpbf16ps's order, its own bits, within
// the same bound), blocks from the tile's first pair on: the same for any thread count.
// Linux only: elsewhere no backend asks for the tiles (and GCC's AMX intrinsics give a 64-bit
// Windows target a 32-bit stride, which it cannot assemble).
#if defined(__linux__)
#define AMX_PAIRS 16
// the tile registers used (literal numbers: the intrinsics paste them into register names)
#define AMX_C0 0
#define AMX_C1 1
#define AMX_A 2
#define AMX_B0 3
#define AMX_B1 4

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t bytes_per_row[16];
    uint8_t rows[16];
} AmxConfig;

// The tiles' shapes, LDTILECFG's 64 bytes, whole at compile time: GCC 12's _tile_loadconfig
// tells the compiler that it reads 8 bytes of them, so stores to a configuration on the stack
// may be dropped as dead (in a scratch copy of this file, amx_configure not inlined, GCC at
// -O2 -march=native kept only the palette, and the first tile load faulted).
static const AmxConfig amx_config = {
    .palette = 1,
    .bytes_per_row = {[AMX_C0] = 64, [AMX_C1] = 64, [AMX_A] = 64, [AMX_B0] = 64, [AMX_B1] = 64},
    .rows = {[AMX_C0] = MR, [AMX_C1] = MR, [AMX_A] = MR, [AMX_B0] = AMX_PAIRS, [AMX_B1] = AMX_PAIRS},
};

// Each thread loads the shapes once, before its first tile.
static _Thread_local int amx_configured;
static void amx_configure(void) {
    _tile_loadconfig(&amx_config);
    amx_configured = 1;
}

// Block p0 (n pairs) of a packed row panel as a tile's rows: row i's pairs at rows[16i], zeros
// past n.
static inline __attribute__((always_inline)) void amx_a_block(uint32_t *rows, const bf16 *a, int p0, int n) {
    const __mmask16 a_row = (__mmask16)((1u << MR) - 1);
    __m512i v[16];  // v[p]: pair p0 + p of the MR rows; transposed, v[i]: row i's pairs
    for (int p = 0; p < 16; p++)
        v[p] = p < n ? _mm512_maskz_loadu_epi32(a_row, a + (long)(p0 + p) * MR * 2) : _mm512_setzero_si512();
    transpose_16x16(v);
    for (int i = 0; i < MR; i++) _mm512_storeu_si512(rows + i * AMX_PAIRS, v[i]);
}

// Bf16Kernels.lay_out_a: each full block of AMX_PAIRS pairs (MR * AMX_PAIRS words) in place
// as the tile's rows; a short last block stays as packed.
static void amx_lay_out_a(bf16 *a, int kp) {
    for (int p0 = 0; p0 + AMX_PAIRS <= kp; p0 += AMX_PAIRS)
        amx_a_block((uint32_t *)(a + (long)p0 * MR * 2), a, p0, AMX_PAIRS);
}

static inline __attribute__((always_inline)) void amx_tile_body(int kp, const bf16 *a, const bf16 *b, float *c,
                                                                long ldc, const float *start_row, int half,
                                                                const int laid_out) {
    uint32_t a_rows[MR * AMX_PAIRS] __attribute__((aligned(64)));  // A's block: row i's pairs at 16i
    uint32_t b_last[AMX_PAIRS * NR] __attribute__((aligned(64)));  // B's last block, zeros past kp
    if (!amx_configured) amx_configure();
    // C's rows, or start_row on every row (a stride of 0)
    const float *from = start_row ? start_row : c;
    long stride = start_row ? 0 : ldc * (long)sizeof(float);
    _tile_loadd(AMX_C0, from, stride);
    if (!half) _tile_loadd(AMX_C1, from + 16, stride);
    for (int p0 = 0; p0 < kp; p0 += AMX_PAIRS) {
        int n = kp - p0 < AMX_PAIRS ? kp - p0 : AMX_PAIRS;
        const bf16 *bk = b + (long)p0 * NR * 2;
        if (n < AMX_PAIRS) {  // a short block: its pairs, then zeros (never the memory past the panel)
            memcpy(b_last, bk, (size_t)n * NR * sizeof(uint32_t));
            memset(b_last + n * NR, 0, (size_t)(AMX_PAIRS - n) * NR * sizeof(uint32_t));
            bk = (const bf16 *)b_last;
        }
        if (laid_out && n == AMX_PAIRS) {
            _tile_loadd(AMX_A, a + (long)p0 * MR * 2, AMX_PAIRS * sizeof(uint32_t));
        } else {
            amx_a_block(a_rows, a, p0, n);
            _tile_loadd(AMX_A, a_rows, AMX_PAIRS * sizeof(uint32_t));
        }
        _tile_loadd(AMX_B0, bk, NR * sizeof(uint32_t));
        _tile_dpbf16ps(AMX_C0, AMX_A, AMX_B0);
        if (!half) {
            _tile_loadd(AMX_B1, bk + 32, NR * sizeof(uint32_t));
            _tile_dpbf16ps(AMX_C1, AMX_A, AMX_B1);
        }
    }
    _tile_stored(AMX_C0, c, ldc * (long)sizeof(float));
    if (!half) _tile_stored(AMX_C1, c + 16, ldc * (long)sizeof(float));
}

static void amx_tile(int kp, const bf16 *a, const bf16 *b, float *c, long ldc, const float *start_row, int half) {
    amx_tile_body(kp, a, b, c, ldc, start_row, half, 0);
}

static void amx_tile_laid_out(int kp, const bf16 *a, const bf16 *b, float *c, long ldc, const float *start_row,
                              int half) {
    amx_tile_body(kp, a, b, c, ldc, start_row, half, 1);
}

const Bf16Kernels bf16_amx_kernels = {"AMX tiles", amx_tile, convert, pack_pairs, dot_rows, .sums = BF16_SUMS_AMX,
                                      .lay_out_a = amx_lay_out_a, .tile_laid_out = amx_tile_laid_out};

// Whether this CPU has AMX's bf16 tiles and the operating system lets this process use them
// (Linux gives a process the tiles' state only when it asks, ARCH_REQ_XCOMP_PERM).
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
static int amx_usable;
static void ask_for_amx(void) {
    unsigned eax, ebx, ecx, edx;  // CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE
    int has = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx >> 22 & 1) && (edx >> 24 & 1);
    amx_usable = has && syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}
int bf16_amx_usable(void) {
    static pthread_once_t asked = PTHREAD_ONCE_INIT;
    pthread_once(&asked, ask_for_amx);
    return amx_usable;
}
#endif

// ---- whether vdpbf16ps pays on this CPU (bf16_avx512_dots_slow)
// On AMD Zen 4 and 5 a vdpbf16ps (32 multiply-adds) issues as often as an fp32 FMA (16), so
// bf16 products can run at twice the FLOPs; on Intel's Xeons with AVX512_BF16 (Sapphire and
// Emerald Rapids) it issues at a quarter of the FMA's rate, half its FLOPs (scripts/bench
// --jobs peak: 85 against 171 GFLOP/s a thread), and a bf16 training step on it took 1.3 to
// 1.5 times the time of an fp32 one (lesson to small, 2 threads), widened to fp32 1.03 to 1.25
// times. The loops: DOT_CHAINS independent sums, DOT_STEPS instructions each, the faster of
// DOT_TRIALS runs taken in turn.
#define DOT_CHAINS 12
#define DOT_STEPS 512
#define DOT_TRIALS 5

static double dot_loop_seconds(int bf16_dots) {
    __m512 acc[DOT_CHAINS];
    for (int c = 0; c < DOT_CHAINS; c++) acc[c] = _mm512_set1_ps(0.001f * c);
    const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-3f);
    const __m512bh xh = (__m512bh)_mm512_set1_epi32(0x3f803f80), yh = (__m512bh)_mm512_set1_epi32(0x3a833a83);
    double start = now_seconds();
    for (int s = 0; s < DOT_STEPS; s++)
        for (int c = 0; c < DOT_CHAINS; c++)
            acc[c] = bf16_dots ? _mm512_dpbf16_ps(acc[c], xh, yh) : _mm512_fmadd_ps(x, acc[c], y);
    double seconds = now_seconds() - start;
    float sink[16];  // the sums are used, so that the loops are not left out
    __m512 total = acc[0];
    for (int c = 1; c < DOT_CHAINS; c++) total = _mm512_add_ps(total, acc[c]);
    _mm512_storeu_ps(sink, total);
    return sink[0] == 12345.0f ? seconds + 1.0 : seconds;
}

static int dots_slow;
static void measure_dots(void) {
    double dot = 1e9, fma = 1e9;
    for (int t = 0; t < DOT_TRIALS; t++) {
        double d = dot_loop_seconds(1), f = dot_loop_seconds(0);
        dot = d < dot ? d : dot;
        fma = f < fma ? f : fma;
    }
    // FLOPs a second: 64 a vdpbf16ps, 32 an FMA, over the same count of each
    dots_slow = 64.0 / dot < BF16_DOT_SLOW_SHARE * 32.0 / fma;
}

int bf16_avx512_dots_slow(void) {
    static pthread_once_t measured = PTHREAD_ONCE_INIT;
    pthread_once(&measured, measure_dots);
    return dots_slow;
}
