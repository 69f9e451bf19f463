/*
 * Argon2id version 0x13 per RFC 9106, written from the RFC text.
 *
 * Layout: the memory matrix B[lane][column] of RFC 9106 section 3.2 is stored row by row
 * (lane by lane) in the caller's area, one 1024-byte block = 128 little-endian 64-bit
 * words each. Lanes are computed one after another in the calling thread; this gives the
 * same result as running them in parallel because a segment only reads other lanes'
 * blocks from slices that are already complete (section 3.4, the sync points between
 * slices), and slices are processed in order for all lanes.
 */
#include "argon2id.h"

#include <stdatomic.h>
#include <string.h>

#include "blake2b.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ARGON2ID_HAVE_AVX2_CODE 1 /* and the AVX-512 code */
#include <cpuid.h>
#include <immintrin.h>
#else
#define ARGON2ID_HAVE_AVX2_CODE 0
#endif

#define QWORDS_IN_BLOCK (ARGON2ID_BLOCK_BYTES / 8)
#define SYNC_POINTS 4            /* slices per pass, RFC 9106 section 3.4 */
#define ADDRESSES_IN_BLOCK 128   /* J1||J2 pairs per address block, section 3.4.1.2 */

/* Where the block after the one being computed will find its reference block, once the
 * first word of the block being computed is known (data-dependent addressing, RFC 9106
 * section 3.4.1.1: J1 || J2 are the first 64 bits of the previous block). The AVX2
 * compression function finishes that word at half time and uses this to prefetch the
 * next reference block while it computes the rest (see fill_block_avx2_body). */
typedef struct {
    const uint64_t *mem;
    uint32_t lanes, lane_len, lane;
    uint32_t w_same, w_other, w_start; /* |W| and the start of W for the next block */
} next_ref_hint;

/* Fills `next` = G(prev, ref) (pass 0) or next ^= G(prev, ref) (later passes, version 0x13,
 * RFC 9106 section 3.2 step 6). next never aliases prev or ref (the reference set W
 * excludes the block being computed and its predecessor, section 3.4.1.2). hint may be NULL.
 * Returns the index of the next block's reference block when it computed it from hint (the
 * caller then skips that computation, which sits on the block-to-block critical path),
 * otherwise NO_REF. */
#define NO_REF SIZE_MAX
typedef size_t (*fill_block_fn)(const uint64_t *prev, const uint64_t *ref, uint64_t *next,
                                const next_ref_hint *hint);

typedef struct {
    uint64_t *mem;
    uint32_t lanes;
    uint32_t lane_len;     /* q = m' / p columns */
    uint32_t seg_len;      /* q / 4 */
    uint32_t passes;
    uint32_t m_blocks;     /* m' */
    fill_block_fn fill;      /* pass 0: overwrite */
    fill_block_fn fill_xor;  /* passes >= 1: XOR into the old block */
} fill_ctx;

/* ---------------------------------------------------------------------------------------
 * Little-endian helpers (RFC 9106 section 3.1: integers are encoded little-endian).
 */
static inline void store32_le(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline uint64_t load64_le(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static inline void store64_le(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t rotr64(uint64_t x, unsigned n) { return (x >> n) | (x << (64 - n)); }

/* RFC 9106 section 3.4.1.2, "Mapping J1 and J2 to reference block index": from the
 * pseudo-random J1 || J2 (low and high 32 bits of rnd) and the size |W| and start of the
 * reference set, the index of the reference block in the whole memory.
 * w_same / w_other are |W| when the reference lane is / is not the current lane. */
static inline size_t ref_block_index(uint64_t rnd, uint32_t lanes, uint32_t lane, int own_lane_only,
                                     uint32_t lane_len, uint32_t w_same, uint32_t w_other,
                                     uint32_t w_start) {
    const uint32_t j1 = (uint32_t)rnd, j2 = (uint32_t)(rnd >> 32);
    /* The lane is J2 mod p, except in the first slice of the first pass, which can only
     * reference its own lane. */
    const uint32_t ref_lane = own_lane_only ? lane : lanes == 1 ? 0 : j2 % lanes;
    const uint32_t w = ref_lane == lane ? w_same : w_other;
    /* x = J1^2 / 2^32, y = |W| * x / 2^32, zz = |W| - 1 - y: a non-uniform choice that
     * favours recently computed blocks. Both products fit in 64 bits, and y < |W|. */
    const uint64_t x = ((uint64_t)j1 * j1) >> 32;
    const uint64_t y = ((uint64_t)w * x) >> 32;
    const uint32_t zz = w - 1 - (uint32_t)y;
    /* W starts at w_start and wraps around the lane; w_start + zz < 2 * lane_len. */
    uint64_t col = (uint64_t)w_start + zz;
    if (col >= lane_len) col -= lane_len;
    return (size_t)ref_lane * lane_len + (size_t)col;
}

/* Asks for a block to be brought into the cache (16 lines of 64 bytes). */
static inline void prefetch_block(const uint64_t *b) {
    for (int i = 0; i < QWORDS_IN_BLOCK; i += 8) __builtin_prefetch(b + i, 0, 3);
}

/* The next block's reference, from word 0 of the block being computed (its J1 and J2), prefetched
 * at once; used by the SIMD compression functions in data-dependent slices. */
static inline size_t prefetch_next_ref(const next_ref_hint *hint, uint64_t rnd) {
    const size_t next_ref = ref_block_index(rnd, hint->lanes, hint->lane, 0, hint->lane_len, hint->w_same,
                                            hint->w_other, hint->w_start);
    prefetch_block(hint->mem + next_ref * QWORDS_IN_BLOCK);
    return next_ref;
}

/* ---------------------------------------------------------------------------------------
 * Portable compression function G (RFC 9106 section 3.5 and 3.6).
 */

/* BlaMka: a + b + 2 * trunc(a) * trunc(b), where trunc takes the low 32 bits. The
 * multiplication is what makes Argon2's G costlier for ASICs than plain BLAKE2b. */
static inline uint64_t fblamka(uint64_t a, uint64_t b) {
    const uint64_t lo = UINT64_C(0xFFFFFFFF);
    return a + b + 2 * ((a & lo) * (b & lo));
}

/* GB of RFC 9106 section 3.6: BLAKE2b's G without message words, with BlaMka additions. */
#define GB_SCALAR(a, b, c, d)          \
    do {                               \
        a = fblamka(a, b);             \
        d = rotr64(d ^ a, 32);         \
        c = fblamka(c, d);             \
        b = rotr64(b ^ c, 24);         \
        a = fblamka(a, b);             \
        d = rotr64(d ^ a, 16);         \
        c = fblamka(c, d);             \
        b = rotr64(b ^ c, 63);         \
    } while (0)

/* Permutation P of section 3.6 on 16 words v0..v15: a column step then a diagonal step,
 * exactly like one BLAKE2b round. */
#define P_SCALAR(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15) \
    do {                                                                               \
        GB_SCALAR(v0, v4, v8, v12);                                                    \
        GB_SCALAR(v1, v5, v9, v13);                                                    \
        GB_SCALAR(v2, v6, v10, v14);                                                   \
        GB_SCALAR(v3, v7, v11, v15);                                                   \
        GB_SCALAR(v0, v5, v10, v15);                                                   \
        GB_SCALAR(v1, v6, v11, v12);                                                   \
        GB_SCALAR(v2, v7, v8, v13);                                                    \
        GB_SCALAR(v3, v4, v9, v14);                                                    \
    } while (0)

static inline void fill_block_scalar_body(const uint64_t *x, const uint64_t *y, uint64_t *out,
                                          int xor_into) {
    /* Section 3.5: R = X ^ Y viewed as an 8x8 matrix of 16-byte registers R0..R63, i.e.
     * register Ri = words 2i, 2i+1. P is applied to each row (8 registers = 16 words),
     * then to each column (registers i, i+8, ..., i+56), and the result is Z ^ R. */
    uint64_t r[QWORDS_IN_BLOCK], z[QWORDS_IN_BLOCK];
    for (int i = 0; i < QWORDS_IN_BLOCK; i++) z[i] = r[i] = x[i] ^ y[i];

    for (int i = 0; i < 8; i++) {
        uint64_t *v = z + 16 * i;
        P_SCALAR(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11],
                 v[12], v[13], v[14], v[15]);
    }
    for (int i = 0; i < 8; i++) {
        uint64_t *v = z + 2 * i;
        P_SCALAR(v[0], v[1], v[16], v[17], v[32], v[33], v[48], v[49], v[64], v[65], v[80],
                 v[81], v[96], v[97], v[112], v[113]);
    }

    if (xor_into) {
        for (int i = 0; i < QWORDS_IN_BLOCK; i++) out[i] ^= z[i] ^ r[i];
    } else {
        for (int i = 0; i < QWORDS_IN_BLOCK; i++) out[i] = z[i] ^ r[i];
    }
}

/* The scalar path ignores the prefetch hint: it is the reference for tests, not for speed. */
static size_t fill_block_scalar(const uint64_t *x, const uint64_t *y, uint64_t *out,
                                const next_ref_hint *hint) {
    (void)hint;
    fill_block_scalar_body(x, y, out, 0);
    return NO_REF;
}

static size_t fill_block_scalar_xor(const uint64_t *x, const uint64_t *y, uint64_t *out,
                                    const next_ref_hint *hint) {
    (void)hint;
    fill_block_scalar_body(x, y, out, 1);
    return NO_REF;
}

/* ---------------------------------------------------------------------------------------
 * AVX2 compression function.
 *
 * A ymm register holds four 64-bit lanes. Instead of putting one P input (16 words) into
 * four registers and rotating lanes across the 128-bit halves for the diagonal step
 * (three cross-lane permutes before and after every diagonal step), two P inputs are
 * processed together, one in each 128-bit half: register k holds the words (v[2k], v[2k+1])
 * of input A in its low half and of input B in its high half ("pair layout"). Then:
 *   - the column step GB(v0,v4,v8,v12) .. GB(v3,v7,v11,v15) is GB on registers (0,2,4,6)
 *     and (1,3,5,7) as they are;
 *   - the diagonal step GB(v0,v5,v10,v15) .. GB(v3,v4,v9,v14) needs registers holding
 *     (v5,v6), (v7,v4), (v10,v11), (v8,v9), (v15,v12), (v13,v14): the 4,5,.. pairs come
 *     from one in-lane byte-align (vpalignr, 1 cycle) of two registers, the (v8..v11)
 *     ones are just registers 5 and 4 swapped.
 * Nothing crosses a 128-bit half inside P, which keeps the long dependency chain of GB short.
 *
 * For the column pass of G (section 3.5) the pair layout is exactly how the block sits in
 * memory: 32 bytes at row r, offset 32j hold register (r, 2j) and (r, 2j+1), which are
 * the k = r words of columns 2j and 2j+1. For the row pass two rows are combined, which
 * costs one 128-bit half swap (vperm2i128) per register on the way in and out.
 *
 * Two such pairs (four P) run interleaved, so that the CPU always has several independent
 * GB chains to work on: 8 rows = 2 x 4, then 8 columns = 2 x 4. The block is held in 16 ymm
 * registers at a time plus a 1 KiB stack copy between the row and the column pass.
 * Measured on this project's AMD EPYC (Zen 3) VM, 1 KiB in cache: ~185 ns per block with two
 * P at a time, ~148 ns with four, ~163 ns with eight (register spills). Where the CPU has
 * AVX-512F and AVX-512VL, the AVX-512 function below is used instead.
 */
#if ARGON2ID_HAVE_AVX2_CODE

#define AVX2_FN __attribute__((target("avx2"), always_inline)) static inline

AVX2_FN __m256i fblamka_avx2(__m256i a, __m256i b) {
    /* vpmuludq multiplies the low 32 bits of each 64-bit lane: trunc(a) * trunc(b). */
    __m256i ml = _mm256_mul_epu32(a, b);
    return _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(ml, ml));
}

AVX2_FN __m256i rotr32_avx2(__m256i x) {
    return _mm256_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1));
}

AVX2_FN __m256i rotr24_avx2(__m256i x) {
    /* Byte rotation within each 64-bit lane: result byte i = source byte (i + 3) mod 8. */
    const __m256i m = _mm256_setr_epi8(3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10,
                                       3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10);
    return _mm256_shuffle_epi8(x, m);
}

AVX2_FN __m256i rotr16_avx2(__m256i x) {
    const __m256i m = _mm256_setr_epi8(2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9,
                                       2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9);
    return _mm256_shuffle_epi8(x, m);
}

AVX2_FN __m256i rotr63_avx2(__m256i x) {
    /* rotr 63 = rotl 1: (x << 1) | (x >> 63); x + x is the shift, XOR equals OR here. */
    return _mm256_xor_si256(_mm256_srli_epi64(x, 63), _mm256_add_epi64(x, x));
}

/* GB (RFC 9106 section 3.6) on four independent groups of registers at once, i.e. 16 of
 * the RFC's GB. One GB is a chain of ~30 dependent instructions (the multiply alone has
 * 3-5 cycles of latency), so the CPU needs several chains in flight: four chains measured
 * ~20% faster than two (and eight spill registers to the stack; see the numbers above). */
#define GB4_AVX2(a0, b0, c0, d0, a1, b1, c1, d1, a2, b2, c2, d2, a3, b3, c3, d3) \
    do {                                                                         \
        a0 = fblamka_avx2(a0, b0);                                               \
        a1 = fblamka_avx2(a1, b1);                                               \
        a2 = fblamka_avx2(a2, b2);                                               \
        a3 = fblamka_avx2(a3, b3);                                               \
        d0 = rotr32_avx2(_mm256_xor_si256(d0, a0));                              \
        d1 = rotr32_avx2(_mm256_xor_si256(d1, a1));                              \
        d2 = rotr32_avx2(_mm256_xor_si256(d2, a2));                              \
        d3 = rotr32_avx2(_mm256_xor_si256(d3, a3));                              \
        c0 = fblamka_avx2(c0, d0);                                               \
        c1 = fblamka_avx2(c1, d1);                                               \
        c2 = fblamka_avx2(c2, d2);                                               \
        c3 = fblamka_avx2(c3, d3);                                               \
        b0 = rotr24_avx2(_mm256_xor_si256(b0, c0));                              \
        b1 = rotr24_avx2(_mm256_xor_si256(b1, c1));                              \
        b2 = rotr24_avx2(_mm256_xor_si256(b2, c2));                              \
        b3 = rotr24_avx2(_mm256_xor_si256(b3, c3));                              \
        a0 = fblamka_avx2(a0, b0);                                               \
        a1 = fblamka_avx2(a1, b1);                                               \
        a2 = fblamka_avx2(a2, b2);                                               \
        a3 = fblamka_avx2(a3, b3);                                               \
        d0 = rotr16_avx2(_mm256_xor_si256(d0, a0));                              \
        d1 = rotr16_avx2(_mm256_xor_si256(d1, a1));                              \
        d2 = rotr16_avx2(_mm256_xor_si256(d2, a2));                              \
        d3 = rotr16_avx2(_mm256_xor_si256(d3, a3));                              \
        c0 = fblamka_avx2(c0, d0);                                               \
        c1 = fblamka_avx2(c1, d1);                                               \
        c2 = fblamka_avx2(c2, d2);                                               \
        c3 = fblamka_avx2(c3, d3);                                               \
        b0 = rotr63_avx2(_mm256_xor_si256(b0, c0));                              \
        b1 = rotr63_avx2(_mm256_xor_si256(b1, c1));                              \
        b2 = rotr63_avx2(_mm256_xor_si256(b2, c2));                              \
        b3 = rotr63_avx2(_mm256_xor_si256(b3, c3));                              \
    } while (0)

/* Pair layout -> diagonal arrangement. _mm256_alignr_epi8(hi, lo, 8) gives
 * (lo.word1, hi.word0) in each 128-bit half. */
#define DIAGONALIZE(y, a0, a1, b0, b1, c0, c1, d0, d1)            \
    do {                                                          \
        a0 = y[0];                                                \
        a1 = y[1];                                                \
        b0 = _mm256_alignr_epi8(y[3], y[2], 8); /* (v5, v6)   */  \
        b1 = _mm256_alignr_epi8(y[2], y[3], 8); /* (v7, v4)   */  \
        c0 = y[5];                              /* (v10, v11) */  \
        c1 = y[4];                              /* (v8, v9)   */  \
        d0 = _mm256_alignr_epi8(y[6], y[7], 8); /* (v15, v12) */  \
        d1 = _mm256_alignr_epi8(y[7], y[6], 8); /* (v13, v14) */  \
    } while (0)

#define UNDIAGONALIZE(y, a0, a1, b0, b1, c0, c1, d0, d1)          \
    do {                                                          \
        y[0] = a0;                                                \
        y[1] = a1;                                                \
        y[2] = _mm256_alignr_epi8(b0, b1, 8); /* (v4, v5)   */    \
        y[3] = _mm256_alignr_epi8(b1, b0, 8); /* (v6, v7)   */    \
        y[4] = c1;                                                \
        y[5] = c0;                                                \
        y[6] = _mm256_alignr_epi8(d1, d0, 8); /* (v12, v13) */    \
        y[7] = _mm256_alignr_epi8(d0, d1, 8); /* (v14, v15) */    \
    } while (0)

/* Four permutations P at once: two in y (one per 128-bit half), two in z, pair layout. */
AVX2_FN void p4_avx2(__m256i y[8], __m256i z[8]) {
    /* Column step of P: (v0,v4,v8,v12),(v1,v5,v9,v13) in registers 0,2,4,6 and
     * (v2,v6,v10,v14),(v3,v7,v11,v15) in registers 1,3,5,7. */
    GB4_AVX2(y[0], y[2], y[4], y[6], y[1], y[3], y[5], y[7],
             z[0], z[2], z[4], z[6], z[1], z[3], z[5], z[7]);

    /* Diagonal step: (v0,v5,v10,v15),(v1,v6,v11,v12) and (v2,v7,v8,v13),(v3,v4,v9,v14). */
    __m256i ya0, ya1, yb0, yb1, yc0, yc1, yd0, yd1;
    __m256i za0, za1, zb0, zb1, zc0, zc1, zd0, zd1;
    DIAGONALIZE(y, ya0, ya1, yb0, yb1, yc0, yc1, yd0, yd1);
    DIAGONALIZE(z, za0, za1, zb0, zb1, zc0, zc1, zd0, zd1);
    GB4_AVX2(ya0, yb0, yc0, yd0, ya1, yb1, yc1, yd1, za0, zb0, zc0, zd0, za1, zb1, zc1, zd1);
    UNDIAGONALIZE(y, ya0, ya1, yb0, yb1, yc0, yc1, yd0, yd1);
    UNDIAGONALIZE(z, za0, za1, zb0, zb1, zc0, zc1, zd0, zd1);
}

/* Memory order: ymm index 4r + j of a block holds registers (r, 2j) | (r, 2j+1) of the
 * 8x8 register matrix (section 3.5). Row pair (2q, 2q+1) in pair layout needs
 * (2q, k) | (2q+1, k) for k = 0..7: one vperm2i128 per register. */
AVX2_FN void rows_to_pairs(const __m256i n[8], __m256i v[8]) {
    for (int j = 0; j < 4; j++) {
        v[2 * j] = _mm256_permute2x128_si256(n[j], n[4 + j], 0x20);
        v[2 * j + 1] = _mm256_permute2x128_si256(n[j], n[4 + j], 0x31);
    }
}

AVX2_FN void pairs_to_rows(const __m256i v[8], __m256i *dst) {
    for (int j = 0; j < 4; j++) {
        _mm256_store_si256(dst + j, _mm256_permute2x128_si256(v[2 * j], v[2 * j + 1], 0x20));
        _mm256_store_si256(dst + 4 + j, _mm256_permute2x128_si256(v[2 * j], v[2 * j + 1], 0x31));
    }
}

AVX2_FN size_t fill_block_avx2_body(const uint64_t *x, const uint64_t *y, uint64_t *out,
                                    const next_ref_hint *hint, int xor_into) {
    const __m256i *X = (const __m256i *)x;
    const __m256i *Y = (const __m256i *)y;
    __m256i *O = (__m256i *)out;
    /* The block after the row pass, in memory order; 1 KiB on the stack (L1-resident). */
    _Alignas(64) __m256i t[32];
    size_t next_ref = NO_REF;

    /* Row pass (section 3.5: P on each row of R = X ^ Y), rows 0-3 then rows 4-7. */
    for (int q = 0; q < 4; q += 2) {
        __m256i n[16], v[8], w[8];
        for (int j = 0; j < 16; j++)
            n[j] = _mm256_xor_si256(_mm256_loadu_si256(X + 8 * q + j),
                                    _mm256_loadu_si256(Y + 8 * q + j));
        rows_to_pairs(n, v);
        rows_to_pairs(n + 8, w);
        p4_avx2(v, w);
        pairs_to_rows(v, t + 8 * q);
        pairs_to_rows(w, t + 8 * q + 8);
    }

    /* Column pass: columns 0-3 then 4-7; in memory order two adjacent columns already are
     * in pair layout. Then Z ^ R (^ the old block). R = X ^ Y is loaded again rather than
     * kept: both blocks are in L1, and this saves a 1 KiB copy. */
    for (int j = 0; j < 4; j += 2) {
        __m256i v[8], w[8];
        for (int k = 0; k < 8; k++) {
            v[k] = _mm256_load_si256(t + 4 * k + j);
            w[k] = _mm256_load_si256(t + 4 * k + j + 1);
        }
        p4_avx2(v, w);
        for (int k = 0; k < 8; k++) {
            for (int h = 0; h < 2; h++) {
                const int i = 4 * k + j + h;
                __m256i o = _mm256_xor_si256(h ? w[k] : v[k], _mm256_xor_si256(_mm256_loadu_si256(X + i),
                                                                                 _mm256_loadu_si256(Y + i)));
                if (xor_into) o = _mm256_xor_si256(o, _mm256_loadu_si256(O + i));
                _mm256_storeu_si256(O + i, o);
            }
        }
        if (j == 0 && hint != NULL) {
            /* Word 0 of the new block (in column 0) is final now, and it decides the next
             * block's reference block (data-dependent addressing). Ask for that block while
             * the second half runs: it is a random read anywhere in the area, usually a
             * cache miss, which would otherwise stall the start of the next block. */
            const uint64_t rnd = (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(_mm256_loadu_si256(O)));
            next_ref = prefetch_next_ref(hint, rnd);
        }
    }
    return next_ref;
}

__attribute__((target("avx2"))) static size_t fill_block_avx2(const uint64_t *x, const uint64_t *y,
                                                              uint64_t *out, const next_ref_hint *hint) {
    return fill_block_avx2_body(x, y, out, hint, 0);
}

__attribute__((target("avx2"))) static size_t fill_block_avx2_xor(const uint64_t *x, const uint64_t *y,
                                                                  uint64_t *out, const next_ref_hint *hint) {
    return fill_block_avx2_body(x, y, out, hint, 1);
}

#endif /* ARGON2ID_HAVE_AVX2_CODE */

/* ---------------------------------------------------------------------------------------
 * AVX-512 compression function (AVX-512F + AVX-512VL).
 *
 * A zmm register holds eight 64-bit words, so the whole block (128 words) fits in 16 of the
 * 32 zmm registers and each pass of G (eight P) runs as four independent GB chains of zmm
 * instructions, as the AVX2 path does with ymm, but each instruction does twice the work.
 * Besides the width, AVX-512 brings:
 *   - vprorq/vprolq, a 64-bit rotation by any count in one instruction (AVX2 needs a byte
 *     shuffle for 24 and 16 and shift + add + xor for 63);
 *   - vpternlogq, a three-input XOR in one instruction (Z ^ R ^ old block);
 *   - vpermt2q, any choice of 64-bit words from two registers, which undoes the diagonal
 *     arrangement and rebuilds memory order in one step;
 *   - 32 registers: block, temporaries and constants need no spills.
 *
 * Memory order: zmm 2r + h of a block holds words 8h .. 8h+7 of row r of the 8x8 matrix of
 * 16-byte registers of section 3.5 (row r = words 16r .. 16r+15).
 *
 * Row pass, "half layout": P's column step is GB(v0,v4,v8,v12) .. GB(v3,v7,v11,v15), i.e.
 * GB on the four-word groups a = v0..v3, b = v4..v7, c = v8..v11, d = v12..v15 word by word.
 * A zmm takes a group of row 2i in its low 256 bits and the same group of row 2i+1 in its
 * high 256 bits (one vshufi64x2 of two memory zmm each), so rows 2i and 2i+1 are one set
 * (a, b, c, d) of four zmm and the four row pairs are the four chains. The diagonal step
 * GB(v0,v5,v10,v15) .. GB(v3,v4,v9,v14) rotates b, c and d by one, two and three words
 * within each 256-bit half (vpermq, vshufi64x2). The way back to memory order, which has
 * to recombine 256-bit halves anyway, undoes that rotation in the same vpermt2q.
 *
 * Column pass, "quad layout" (the AVX2 pair layout with four P instead of two): zmm k holds
 * the words (v[2k], v[2k+1]) of four P inputs, one per 128-bit lane. P on column c takes
 * as its register k the register (k, c) of the matrix, which is lane c mod 4 of zmm
 * 2k + c / 4: memory order already is quad layout, columns 0-3 in the even zmm and 4-7 in
 * the odd ones. The column step is GB on zmm (0,2,4,6) and (1,3,5,7) as they are; the
 * diagonal step needs (v5,v6), (v7,v4), (v15,v12), (v13,v14), each one in-lane vshufpd of
 * two registers (vpalignr on zmm would need AVX-512BW). Columns 0-3 are done first, on
 * their own: word 0 of the new block is then final and the next reference block is
 * prefetched (see fill_block_avx2_body) while columns 4-7 are computed. Doing all eight
 * columns at once (four chains instead of two) is as fast in cache but ~10% slower at
 * m = 19456, where the prefetch then comes too late.
 *
 * Measured on this project's 2-vCPU Intel Xeon (AVX-512) VM, per block, alternated runs in
 * one process: ~105-125 ns in cache against ~185-190 ns for the AVX2 path, ~140-165 ns
 * against ~210 ns at m = 19456 (see README.md). Variants that measured no better and were dropped:
 * the row pass in quad layout too (a 4x4 transpose of 128-bit lanes on the way in and out,
 * ~4% slower), the 32-bit rotation as vpshufd (balances ports 0 and 5; no difference),
 * prefetching the next output block, prefetching into L2 only (slower) and prefetching two
 * or four blocks ahead in the data-independent slices.
 */
#if ARGON2ID_HAVE_AVX2_CODE

#define AVX512_FN __attribute__((target("avx512f,avx512vl"), always_inline)) static inline

AVX512_FN __m512i fblamka_avx512(__m512i a, __m512i b) {
    __m512i ml = _mm512_mul_epu32(a, b); /* trunc(a) * trunc(b), vpmuludq */
    return _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(ml, ml));
}

/* Half of GB: a = BlaMka(a, b); d = (d ^ a) >>> n, on four independent groups at once. */
#define GB_HALF_AVX512(a0, b0, d0, a1, b1, d1, a2, b2, d2, a3, b3, d3, n) \
    do {                                                                 \
        a0 = fblamka_avx512(a0, b0);                                     \
        a1 = fblamka_avx512(a1, b1);                                     \
        a2 = fblamka_avx512(a2, b2);                                     \
        a3 = fblamka_avx512(a3, b3);                                     \
        d0 = _mm512_ror_epi64(_mm512_xor_si512(d0, a0), n);              \
        d1 = _mm512_ror_epi64(_mm512_xor_si512(d1, a1), n);              \
        d2 = _mm512_ror_epi64(_mm512_xor_si512(d2, a2), n);              \
        d3 = _mm512_ror_epi64(_mm512_xor_si512(d3, a3), n);              \
    } while (0)

/* GB (RFC 9106 section 3.6) on four groups (a, b, c, d) of registers. */
#define GB4_AVX512(a0, b0, c0, d0, a1, b1, c1, d1, a2, b2, c2, d2, a3, b3, c3, d3) \
    do {                                                                       \
        GB_HALF_AVX512(a0, b0, d0, a1, b1, d1, a2, b2, d2, a3, b3, d3, 32);    \
        GB_HALF_AVX512(c0, d0, b0, c1, d1, b1, c2, d2, b2, c3, d3, b3, 24);    \
        GB_HALF_AVX512(a0, b0, d0, a1, b1, d1, a2, b2, d2, a3, b3, d3, 16);    \
        GB_HALF_AVX512(c0, d0, b0, c1, d1, b1, c2, d2, b2, c3, d3, b3, 63);    \
    } while (0)

/* The same on two groups. */
#define GB2_AVX512(a0, b0, c0, d0, a1, b1, c1, d1)                        \
    do {                                                                  \
        a0 = fblamka_avx512(a0, b0);                                      \
        a1 = fblamka_avx512(a1, b1);                                      \
        d0 = _mm512_ror_epi64(_mm512_xor_si512(d0, a0), 32);              \
        d1 = _mm512_ror_epi64(_mm512_xor_si512(d1, a1), 32);              \
        c0 = fblamka_avx512(c0, d0);                                      \
        c1 = fblamka_avx512(c1, d1);                                      \
        b0 = _mm512_ror_epi64(_mm512_xor_si512(b0, c0), 24);              \
        b1 = _mm512_ror_epi64(_mm512_xor_si512(b1, c1), 24);              \
        a0 = fblamka_avx512(a0, b0);                                      \
        a1 = fblamka_avx512(a1, b1);                                      \
        d0 = _mm512_ror_epi64(_mm512_xor_si512(d0, a0), 16);              \
        d1 = _mm512_ror_epi64(_mm512_xor_si512(d1, a1), 16);              \
        c0 = fblamka_avx512(c0, d0);                                      \
        c1 = fblamka_avx512(c1, d1);                                      \
        b0 = _mm512_ror_epi64(_mm512_xor_si512(b0, c0), 63);              \
        b1 = _mm512_ror_epi64(_mm512_xor_si512(b1, c1), 63);              \
    } while (0)

/* Row pass: P on all eight rows, in half layout (set i = rows 2i and 2i + 1). Leaves b, c
 * and d in the diagonal arrangement; rows_to_memory_avx512 puts them back. */
AVX512_FN void p8_rows_avx512(__m512i a[4], __m512i b[4], __m512i c[4], __m512i d[4]) {
    GB4_AVX512(a[0], b[0], c[0], d[0], a[1], b[1], c[1], d[1], a[2], b[2], c[2], d[2], a[3], b[3], c[3], d[3]);
    for (int i = 0; i < 4; i++) {
        b[i] = _mm512_permutex_epi64(b[i], _MM_SHUFFLE(0, 3, 2, 1)); /* v5 v6 v7 v4 */
        c[i] = _mm512_permutex_epi64(c[i], _MM_SHUFFLE(1, 0, 3, 2)); /* v10 v11 v8 v9 */
        d[i] = _mm512_permutex_epi64(d[i], _MM_SHUFFLE(2, 1, 0, 3)); /* v15 v12 v13 v14 */
    }
    GB4_AVX512(a[0], b[0], c[0], d[0], a[1], b[1], c[1], d[1], a[2], b[2], c[2], d[2], a[3], b[3], c[3], d[3]);
}

/* After p8_rows_avx512: memory order for rows 2i (zmm 4i, 4i + 1) and 2i + 1 (4i + 2, 4i + 3).
 * vpermt2q index: 0-7 pick a word of the first register, 8-15 of the second. Row 2i's
 * words 0-7 are a.0-3 then b.3, b.0, b.1, b.2 (b holds v5 v6 v7 v4); words 8-15 are
 * c.2, c.3, c.0, c.1 (c holds v10 v11 v8 v9) then d.1, d.2, d.3, d.0 (v15 v12 v13 v14).
 * Row 2i + 1 likewise from the high halves (+4). */
AVX512_FN void rows_to_memory_avx512(const __m512i a[4], const __m512i b[4], const __m512i c[4],
                                     const __m512i d[4], __m512i t[16]) {
    const __m512i ab_lo = _mm512_setr_epi64(0, 1, 2, 3, 11, 8, 9, 10);
    const __m512i ab_hi = _mm512_setr_epi64(4, 5, 6, 7, 15, 12, 13, 14);
    const __m512i cd_lo = _mm512_setr_epi64(2, 3, 0, 1, 9, 10, 11, 8);
    const __m512i cd_hi = _mm512_setr_epi64(6, 7, 4, 5, 13, 14, 15, 12);
    for (int i = 0; i < 4; i++) {
        t[4 * i] = _mm512_permutex2var_epi64(a[i], ab_lo, b[i]);
        t[4 * i + 1] = _mm512_permutex2var_epi64(c[i], cd_lo, d[i]);
        t[4 * i + 2] = _mm512_permutex2var_epi64(a[i], ab_hi, b[i]);
        t[4 * i + 3] = _mm512_permutex2var_epi64(c[i], cd_hi, d[i]);
    }
}

/* (a.word1, b.word0) in each 128-bit lane: vshufpd with immediate 0b01010101. */
AVX512_FN __m512i cross_avx512(__m512i a, __m512i b) {
    return _mm512_castpd_si512(_mm512_shuffle_pd(_mm512_castsi512_pd(a), _mm512_castsi512_pd(b), 0x55));
}

/* Column pass: P on four columns in quad layout (y[k] = register k of each), as p4_avx2's
 * pair layout: column step, then the diagonal step on re-paired registers. */
AVX512_FN void p4_columns_avx512(__m512i y[8]) {
    GB2_AVX512(y[0], y[2], y[4], y[6], y[1], y[3], y[5], y[7]);
    __m512i b0 = cross_avx512(y[2], y[3]); /* (v5, v6)   */
    __m512i b1 = cross_avx512(y[3], y[2]); /* (v7, v4)   */
    __m512i d0 = cross_avx512(y[7], y[6]); /* (v15, v12) */
    __m512i d1 = cross_avx512(y[6], y[7]); /* (v13, v14) */
    /* a = (v0,v1), (v2,v3) as they are; c = (v10,v11), (v8,v9) are registers 5 and 4. */
    GB2_AVX512(y[0], b0, y[5], d0, y[1], b1, y[4], d1);
    y[2] = cross_avx512(b1, b0); /* (v4, v5)   */
    y[3] = cross_avx512(b0, b1); /* (v6, v7)   */
    y[6] = cross_avx512(d0, d1); /* (v12, v13) */
    y[7] = cross_avx512(d1, d0); /* (v14, v15) */
}

/* Output zmm i: Z ^ R (pass 0) or Z ^ R ^ the old block (later passes, one vpternlogq,
 * 0x96 = a ^ b ^ c). Returns what it stored. */
AVX512_FN __m512i store_out_avx512(__m512i *O, const __m512i *R, int i, __m512i z, int xor_into) {
    const __m512i o = xor_into ? _mm512_ternarylogic_epi64(z, R[i], _mm512_loadu_si512(O + i), 0x96)
                               : _mm512_xor_si512(z, R[i]);
    _mm512_storeu_si512(O + i, o);
    return o;
}

AVX512_FN size_t fill_block_avx512_body(const uint64_t *x, const uint64_t *y, uint64_t *out,
                                        const next_ref_hint *hint, int xor_into) {
    const __m512i *X = (const __m512i *)x;
    const __m512i *Y = (const __m512i *)y;
    __m512i *O = (__m512i *)out;
    /* R = X ^ Y and the block after the row pass, both in memory order, on the stack (L1).
     * Keeping R costs 16 stores but saves reloading X and Y and one XOR per zmm at the end
     * (measured ~4% in cache). */
    _Alignas(64) __m512i r[16], t[16];
    size_t next_ref = NO_REF;

    /* Row pass. */
    __m512i a[4], b[4], c[4], d[4];
    for (int i = 0; i < 16; i++) r[i] = _mm512_xor_si512(_mm512_loadu_si512(X + i), _mm512_loadu_si512(Y + i));
    for (int i = 0; i < 4; i++) {
        /* Rows 2i (zmm 4i, 4i + 1) and 2i + 1 (zmm 4i + 2, 4i + 3) into half layout. */
        a[i] = _mm512_shuffle_i64x2(r[4 * i], r[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        b[i] = _mm512_shuffle_i64x2(r[4 * i], r[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        c[i] = _mm512_shuffle_i64x2(r[4 * i + 1], r[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        d[i] = _mm512_shuffle_i64x2(r[4 * i + 1], r[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    p8_rows_avx512(a, b, c, d);
    rows_to_memory_avx512(a, b, c, d, t);

    /* Column pass: columns 0-3 (even zmm), then 4-7 (odd zmm). */
    __m512i v[8];
    for (int k = 0; k < 8; k++) v[k] = t[2 * k];
    p4_columns_avx512(v);
    const __m512i first = store_out_avx512(O, r, 0, v[0], xor_into);
    for (int k = 1; k < 8; k++) store_out_avx512(O, r, 2 * k, v[k], xor_into);
    if (hint != NULL) {
        /* Word 0 of the new block is final: ask for the next block's reference block now
         * (data-dependent addressing), while columns 4-7 are computed. */
        const uint64_t rnd = (uint64_t)_mm_cvtsi128_si64(_mm512_castsi512_si128(first));
        next_ref = prefetch_next_ref(hint, rnd);
    }
    for (int k = 0; k < 8; k++) v[k] = t[2 * k + 1];
    p4_columns_avx512(v);
    for (int k = 0; k < 8; k++) store_out_avx512(O, r, 2 * k + 1, v[k], xor_into);
    return next_ref;
}

__attribute__((target("avx512f,avx512vl"))) static size_t fill_block_avx512(const uint64_t *x, const uint64_t *y,
                                                                           uint64_t *out, const next_ref_hint *hint) {
    return fill_block_avx512_body(x, y, out, hint, 0);
}

__attribute__((target("avx512f,avx512vl"))) static size_t fill_block_avx512_xor(const uint64_t *x, const uint64_t *y,
                                                                               uint64_t *out, const next_ref_hint *hint) {
    return fill_block_avx512_body(x, y, out, hint, 1);
}
#endif /* ARGON2ID_HAVE_AVX2_CODE */

/* ---------------------------------------------------------------------------------------
 * Run-time choice of the compression function.
 *
 * CPUID says what the CPU implements, XGETBV (register XCR0) what state the OS saves on a
 * context switch: an instruction set whose registers the OS does not save cannot be used
 * even if the CPU has it (YMM upper halves for AVX2; opmask registers, ZMM upper halves and
 * ZMM16-31 for AVX-512).
 */
#define SIMD_AVX2 1u
#define SIMD_AVX512 2u

#if ARGON2ID_HAVE_AVX2_CODE
static unsigned detect_simd(void) {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    /* CPUID.1:ECX bit 27 OSXSAVE (XGETBV is usable), bit 28 AVX. */
    if (!(ecx & (1u << 27)) || !(ecx & (1u << 28))) return 0;
    unsigned xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    (void)xcr0_hi;
    /* XCR0 bit 1 SSE state, bit 2 YMM upper halves. */
    if ((xcr0_lo & 0x6u) != 0x6u) return 0;
    /* CPUID.(7,0):EBX bit 5 AVX2, bit 16 AVX-512F, bit 31 AVX-512VL. */
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
    unsigned simd = 0;
    if (ebx & (1u << 5)) simd |= SIMD_AVX2;
    /* XCR0 bits 5-7: opmask registers, ZMM0-15 upper halves, ZMM16-31. (macOS enables the
     * AVX-512 state only on first use, so there this check errs on the side of AVX2.) */
    if ((simd & SIMD_AVX2) && (ebx & (1u << 16)) && (ebx & (1u << 31)) && (xcr0_lo & 0xE6u) == 0xE6u)
        simd |= SIMD_AVX512;
    return simd;
}
#else
static unsigned detect_simd(void) { return 0; }
#endif

/* CPUID is slow under a hypervisor (it traps), so it runs once; threads that race here
 * compute and store the same value. */
static unsigned cpu_simd(void) {
    static _Atomic int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        v = (int)detect_simd();
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return (unsigned)v;
}

int argon2id_impl_available(argon2id_impl impl) {
    switch (impl) {
        case ARGON2ID_IMPL_AUTO:
        case ARGON2ID_IMPL_SCALAR: return 1;
        case ARGON2ID_IMPL_AVX2: return (cpu_simd() & SIMD_AVX2) != 0;
        case ARGON2ID_IMPL_AVX512: return (cpu_simd() & SIMD_AVX512) != 0;
        default: return 0;
    }
}

static argon2id_impl best_impl(void) {
    const unsigned simd = cpu_simd();
    return (simd & SIMD_AVX512) ? ARGON2ID_IMPL_AVX512 : (simd & SIMD_AVX2) ? ARGON2ID_IMPL_AVX2 : ARGON2ID_IMPL_SCALAR;
}

const char *argon2id_impl_name(void) {
    switch (best_impl()) {
        case ARGON2ID_IMPL_AVX512: return "avx512";
        case ARGON2ID_IMPL_AVX2: return "avx2";
        default: return "scalar";
    }
}

/* ---------------------------------------------------------------------------------------
 * H' (RFC 9106 section 3.3): variable-length hash built from BLAKE2b.
 * in1 || in2 is the input (two parts so that callers need no concatenation buffer).
 */
static void hprime(uint8_t *out, size_t outlen, const uint8_t *in1, size_t in1len,
                   const uint8_t *in2, size_t in2len) {
    blake2b_state S;
    uint8_t len_le[4];
    store32_le(len_le, (uint32_t)outlen);

    if (outlen <= BLAKE2B_OUTBYTES) {
        /* H'^T(A) = H^T(LE32(T) || A) */
        blake2b_init(&S, outlen);
        blake2b_update(&S, len_le, 4);
        blake2b_update(&S, in1, in1len);
        blake2b_update(&S, in2, in2len);
        blake2b_final(&S, out);
        return;
    }

    /* r = ceil(T/32) - 2; V1 = H^64(LE32(T) || A), V(i+1) = H^64(V(i)); the output is the
     * first 32 bytes of V1..Vr followed by V(r+1) = H^(T-32r)(Vr) in full. */
    uint8_t v[BLAKE2B_OUTBYTES];
    blake2b_init(&S, BLAKE2B_OUTBYTES);
    blake2b_update(&S, len_le, 4);
    blake2b_update(&S, in1, in1len);
    blake2b_update(&S, in2, in2len);
    blake2b_final(&S, v);
    memcpy(out, v, 32);
    out += 32;
    size_t remaining = outlen - 32;
    while (remaining > BLAKE2B_OUTBYTES) {
        blake2b(v, BLAKE2B_OUTBYTES, v, BLAKE2B_OUTBYTES);
        memcpy(out, v, 32);
        out += 32;
        remaining -= 32;
    }
    blake2b(out, remaining, v, BLAKE2B_OUTBYTES);
    argon2_secure_wipe(v, sizeof v);
}

/* ---------------------------------------------------------------------------------------
 * Filling (RFC 9106 section 3.2 steps 5-6 and section 3.4).
 */

/* Section 3.4.1.2: the next block of 128 (J1, J2) pairs for data-independent addressing,
 * G(ZERO, G(ZERO, Z || counter || ZERO)); the counter (word 6) starts at 1. */
static void next_addresses(const fill_ctx *c, uint64_t *address, uint64_t *input,
                           const uint64_t *zero, uint64_t *tmp) {
    input[6]++;
    c->fill(zero, input, tmp, NULL);
    c->fill(zero, tmp, address, NULL);
}

static void fill_segment(const fill_ctx *c, uint32_t pass, uint32_t lane, uint32_t slice) {
    _Alignas(64) uint64_t address[QWORDS_IN_BLOCK];
    _Alignas(64) uint64_t input[QWORDS_IN_BLOCK];
    _Alignas(64) uint64_t zero[QWORDS_IN_BLOCK];
    _Alignas(64) uint64_t tmp[QWORDS_IN_BLOCK];

    /* Argon2id (section 3.4.1.3): data-independent addressing for the first half of the
     * first pass (slices 0 and 1), data-dependent everywhere else. */
    const int data_independent = (pass == 0 && slice < SYNC_POINTS / 2);
    /* The first slice of the first pass can only reference its own lane (section 3.4.1.2). */
    const int own_lane_only = (pass == 0 && slice == 0);
    /* Columns 0 and 1 of pass 0 come from H0 (section 3.2 step 5). */
    const uint32_t start = (pass == 0 && slice == 0) ? 2 : 0;
    fill_block_fn fill = pass == 0 ? c->fill : c->fill_xor;
    const uint32_t lane_len = c->lane_len, seg_len = c->seg_len;

    if (data_independent) {
        /* Z = LE64(r) || LE64(l) || LE64(sl) || LE64(m') || LE64(t) || LE64(y), then the
         * counter, then zeros up to 1024 bytes (section 3.4.1.2). As words of the block. */
        memset(input, 0, sizeof input);
        memset(zero, 0, sizeof zero);
        input[0] = pass;
        input[1] = lane;
        input[2] = slice;
        input[3] = c->m_blocks;
        input[4] = c->passes;
        input[5] = ARGON2ID_TYPE;
        /* Address block k serves positions 128k .. 128k+127 of the segment; with start = 2
         * the first block is needed before the loop reaches a multiple of 128. */
        if (start != 0) next_addresses(c, address, input, zero, tmp);
    }

    /* The reference set W (section 3.4.1.2). Same lane: every block computed so far except
     * the previous one. Other lane: the blocks of completed segments (pass 0: the slices
     * before this one; later passes: the other three slices), minus the last of them for
     * the first block of a segment (in a parallel computation that block may not be ready).
     * In passes after the first, W starts at the segment after the current one, wrapping
     * to column 0; in pass 0 at column 0. |W| at position i is base + i - 1 (same lane)
     * and base, or base - 1 for i = 0 (other lane). */
    const uint32_t w_base = pass == 0 ? slice * seg_len : lane_len - seg_len;
    const uint32_t w_start = pass == 0 ? 0 : ((slice + 1) % SYNC_POINTS) * seg_len;

    next_ref_hint hint;
    hint.mem = c->mem;
    hint.lanes = c->lanes;
    hint.lane_len = lane_len;
    hint.lane = lane;
    hint.w_other = w_base;
    hint.w_start = w_start;

    size_t cur = (size_t)lane * lane_len + (size_t)slice * seg_len + start;
    /* The previous block is the one to the left, or the lane's last for column 0 of
     * passes after the first (section 3.2 step 6). */
    size_t prev = (slice == 0 && start == 0) ? cur + lane_len - 1 : cur - 1;
    uint64_t *const mem = c->mem;
    size_t next_ref = NO_REF; /* this block's reference, when the previous fill computed it */

    for (uint32_t i = start; i < seg_len; i++, cur++) {
        const uint32_t w_same = w_base + i - 1, w_other = w_base - (i == 0 ? 1 : 0);
        const next_ref_hint *h = NULL;
        size_t ref;
        if (data_independent) {
            if (i % ADDRESSES_IN_BLOCK == 0) next_addresses(c, address, input, zero, tmp);
            ref = ref_block_index(address[i % ADDRESSES_IN_BLOCK], c->lanes, lane, own_lane_only,
                                  lane_len, w_same, w_other, w_start);
            /* The next reference is known already: ask for it now (see prefetch_block). */
            if (i + 1 < seg_len && (i + 1) % ADDRESSES_IN_BLOCK != 0)
                prefetch_block(mem + ref_block_index(address[(i + 1) % ADDRESSES_IN_BLOCK], c->lanes,
                                                     lane, own_lane_only, lane_len, w_base + i, w_base,
                                                     w_start) *
                                         QWORDS_IN_BLOCK);
        } else {
            /* Data-dependent: J1 || J2 are the first 64 bits of the previous block. */
            ref = next_ref != NO_REF ? next_ref
                                     : ref_block_index(mem[prev * QWORDS_IN_BLOCK], c->lanes, lane,
                                                       own_lane_only, lane_len, w_same, w_other, w_start);
            if (i + 1 < seg_len) {
                hint.w_same = w_base + i; /* |W| at position i + 1, same lane */
                h = &hint;
            }
        }
        next_ref = fill(mem + prev * QWORDS_IN_BLOCK, mem + ref * QWORDS_IN_BLOCK,
                        mem + cur * QWORDS_IN_BLOCK, h);
        prev = cur;
    }
    /* address, input and tmp derive only from public values (position and costs). */
}

/* ---------------------------------------------------------------------------------------
 * Public API
 */
size_t argon2id_area_bytes(uint32_t m_kib, uint32_t p) {
    if (p < 1 || p > ARGON2ID_MAX_LANES) return 0;
    if ((uint64_t)m_kib < 8 * (uint64_t)p) return 0;
    const uint64_t m_blocks = 4 * (uint64_t)p * (m_kib / (4 * (uint64_t)p));
    return (size_t)(m_blocks * ARGON2ID_BLOCK_BYTES);
}

const char *argon2id_error_message(int code) {
    switch (code) {
        case ARGON2ID_OK: return "ok";
        case ARGON2ID_ERR_NULL: return "NULL pointer with a non-zero length";
        case ARGON2ID_ERR_OUTLEN: return "output length must be 4..2^32-1 bytes";
        case ARGON2ID_ERR_PWDLEN: return "password must be at most 2^32-1 bytes";
        case ARGON2ID_ERR_SALTLEN: return "salt must be 8..2^32-1 bytes";
        case ARGON2ID_ERR_PASSES: return "time cost (passes) must be at least 1";
        case ARGON2ID_ERR_LANES: return "parallelism (lanes) must be 1..2^24-1";
        case ARGON2ID_ERR_MEMORY_COST: return "memory cost must be at least 8 KiB per lane";
        case ARGON2ID_ERR_AREA: return "memory area too small or not 64-byte aligned";
        case ARGON2ID_ERR_IMPL: return "compression function not available on this CPU";
        default: return "unknown error";
    }
}

int argon2id_raw_impl(const uint8_t *pwd, size_t pwdlen, const uint8_t *salt, size_t saltlen,
                      uint32_t t, uint32_t m_kib, uint32_t p, uint8_t *out, size_t outlen,
                      void *memory, size_t memory_bytes, argon2id_impl impl) {
    /* Parameter checks, RFC 9106 section 3.1. */
    if ((pwd == NULL && pwdlen != 0) || salt == NULL || out == NULL || memory == NULL)
        return ARGON2ID_ERR_NULL;
    if (outlen < ARGON2ID_MIN_OUTLEN || (uint64_t)outlen > UINT32_MAX) return ARGON2ID_ERR_OUTLEN;
    if ((uint64_t)pwdlen > UINT32_MAX) return ARGON2ID_ERR_PWDLEN;
    if (saltlen < ARGON2ID_MIN_SALTLEN || (uint64_t)saltlen > UINT32_MAX) return ARGON2ID_ERR_SALTLEN;
    if (t < 1) return ARGON2ID_ERR_PASSES;
    if (p < 1 || p > ARGON2ID_MAX_LANES) return ARGON2ID_ERR_LANES;
    if ((uint64_t)m_kib < 8 * (uint64_t)p) return ARGON2ID_ERR_MEMORY_COST;
    const size_t need = argon2id_area_bytes(m_kib, p);
    if (memory_bytes < need || ((uintptr_t)memory % ARGON2ID_AREA_ALIGN) != 0) return ARGON2ID_ERR_AREA;

    fill_ctx c;
    c.mem = (uint64_t *)memory;
    c.lanes = p;
    c.m_blocks = (uint32_t)(need / ARGON2ID_BLOCK_BYTES);
    c.lane_len = c.m_blocks / p;
    c.seg_len = c.lane_len / SYNC_POINTS;
    c.passes = t;

    if (impl == ARGON2ID_IMPL_AUTO) impl = best_impl();
    if (!argon2id_impl_available(impl)) return ARGON2ID_ERR_IMPL;
    if (impl == ARGON2ID_IMPL_SCALAR) {
        c.fill = fill_block_scalar;
        c.fill_xor = fill_block_scalar_xor;
#if ARGON2ID_HAVE_AVX2_CODE
    } else if (impl == ARGON2ID_IMPL_AVX2) {
        c.fill = fill_block_avx2;
        c.fill_xor = fill_block_avx2_xor;
    } else if (impl == ARGON2ID_IMPL_AVX512) {
        c.fill = fill_block_avx512;
        c.fill_xor = fill_block_avx512_xor;
#endif
    } else {
        return ARGON2ID_ERR_IMPL;
    }

    /* Section 3.2 step 2: H0 = H^64(LE32(p) || LE32(T) || LE32(m) || LE32(t) || LE32(v) ||
     * LE32(y) || LE32(len P) || P || LE32(len S) || S || LE32(len K) || K || LE32(len X) || X)
     * with m the requested KiB (not m'), and K, X empty. */
    uint8_t h0[BLAKE2B_OUTBYTES + 8]; /* room for the LE32(column) || LE32(lane) suffix */
    {
        blake2b_state S;
        uint8_t le[4];
        blake2b_init(&S, BLAKE2B_OUTBYTES);
        const uint32_t head[6] = {p, (uint32_t)outlen, m_kib, t, ARGON2ID_VERSION, ARGON2ID_TYPE};
        for (int i = 0; i < 6; i++) {
            store32_le(le, head[i]);
            blake2b_update(&S, le, 4);
        }
        store32_le(le, (uint32_t)pwdlen);
        blake2b_update(&S, le, 4);
        blake2b_update(&S, pwd, pwdlen);
        store32_le(le, (uint32_t)saltlen);
        blake2b_update(&S, le, 4);
        blake2b_update(&S, salt, saltlen);
        store32_le(le, 0); /* secret K: empty */
        blake2b_update(&S, le, 4);
        blake2b_update(&S, le, 4); /* associated data X: empty */
        blake2b_final(&S, h0);
    }

    /* Steps 3-4: B[i][0] = H'^1024(H0 || LE32(0) || LE32(i)), B[i][1] likewise with 1. */
    uint8_t blockbytes[ARGON2ID_BLOCK_BYTES];
    for (uint32_t lane = 0; lane < p; lane++) {
        for (uint32_t col = 0; col < 2; col++) {
            store32_le(h0 + BLAKE2B_OUTBYTES, col);
            store32_le(h0 + BLAKE2B_OUTBYTES + 4, lane);
            hprime(blockbytes, sizeof blockbytes, h0, sizeof h0, NULL, 0);
            uint64_t *b = c.mem + ((size_t)lane * c.lane_len + col) * QWORDS_IN_BLOCK;
            for (int k = 0; k < QWORDS_IN_BLOCK; k++) b[k] = load64_le(blockbytes + 8 * k);
        }
    }
    argon2_secure_wipe(h0, sizeof h0);

    /* Steps 5-6: all passes; within a pass slice by slice (the sync points), every lane's
     * segment of a slice before the next slice. */
    for (uint32_t pass = 0; pass < t; pass++)
        for (uint32_t slice = 0; slice < SYNC_POINTS; slice++)
            for (uint32_t lane = 0; lane < p; lane++) fill_segment(&c, pass, lane, slice);

    /* Steps 7-8: C = XOR of the last column, tag = H'^T(C). */
    uint64_t *last = c.mem + ((size_t)c.lane_len - 1) * QWORDS_IN_BLOCK;
    for (int k = 0; k < QWORDS_IN_BLOCK; k++) {
        uint64_t v = last[k];
        for (uint32_t lane = 1; lane < p; lane++) v ^= last[(size_t)lane * c.lane_len * QWORDS_IN_BLOCK + k];
        store64_le(blockbytes + 8 * k, v);
    }
    hprime(out, outlen, blockbytes, sizeof blockbytes, NULL, 0);
    argon2_secure_wipe(blockbytes, sizeof blockbytes);
    return ARGON2ID_OK;
}

int argon2id_raw(const uint8_t *pwd, size_t pwdlen, const uint8_t *salt, size_t saltlen,
                 uint32_t t, uint32_t m_kib, uint32_t p, uint8_t *out, size_t outlen,
                 void *memory, size_t memory_bytes) {
    return argon2id_raw_impl(pwd, pwdlen, salt, saltlen, t, m_kib, p, out, outlen, memory,
                             memory_bytes, ARGON2ID_IMPL_AUTO);
}
