/*
 * BLAKE2b per RFC 7693, written from the RFC text.
 *
 * Argon2 hashes little data with it (H0 over the inputs, and H' over 72-byte or 1 KiB
 * inputs), so this is a straightforward portable implementation: the time of an Argon2id
 * hash is spent in the compression function G of argon2id.c, not here.
 */
#include "blake2b.h"

#include <string.h>

/* RFC 7693 section 2.6: the IV is the SHA-512 IV (first 64 bits of the fractional
 * parts of the square roots of the first eight primes). */
static const uint64_t blake2b_iv[8] = {
    UINT64_C(0x6a09e667f3bcc908), UINT64_C(0xbb67ae8584caa73b),
    UINT64_C(0x3c6ef372fe94f82b), UINT64_C(0xa54ff53a5f1d36f1),
    UINT64_C(0x510e527fade682d1), UINT64_C(0x9b05688c2b3e6c1f),
    UINT64_C(0x1f83d9abfb41bd6b), UINT64_C(0x5be0cd19137e2179),
};

/* RFC 7693 section 2.7: message word schedule SIGMA. Rounds 10 and 11 reuse rows 0 and 1
 * (the round number is taken modulo 10 where it is read). */
static const uint8_t blake2b_sigma[10][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
};

/* RFC 7693 uses little-endian byte order for all words (section 2.4). Byte-wise
 * assembly keeps this correct on any host; compilers turn it into a plain load on x86. */
static inline uint64_t load64_le(const uint8_t *p) {
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) |
           ((uint64_t)p[3] << 24) | ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) |
           ((uint64_t)p[6] << 48) | ((uint64_t)p[7] << 56);
}

static inline void store64_le(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t rotr64(uint64_t x, unsigned n) { return (x >> n) | (x << (64 - n)); }

void argon2_secure_wipe(void *p, size_t n) {
#if defined(__GNUC__) || defined(__clang__)
    /* memset followed by an empty asm that claims to read the memory: the compiler must
     * keep the stores (a plain memset before a return could be dropped as dead), and it
     * still uses its fast memset rather than a byte-by-byte volatile loop. */
    memset(p, 0, n);
    __asm__ __volatile__("" : : "r"(p) : "memory");
#else
    volatile uint8_t *v = (volatile uint8_t *)p;
    while (n--) *v++ = 0;
#endif
}

/* RFC 7693 section 3.1: the mixing function G with rotations R1..R4 = 32, 24, 16, 63. */
#define B2B_G(a, b, c, d, x, y)            \
    do {                                   \
        a = a + b + (x);                   \
        d = rotr64(d ^ a, 32);             \
        c = c + d;                         \
        b = rotr64(b ^ c, 24);             \
        a = a + b + (y);                   \
        d = rotr64(d ^ a, 16);             \
        c = c + d;                         \
        b = rotr64(b ^ c, 63);             \
    } while (0)

/* RFC 7693 section 3.2: compression function F. */
static void blake2b_compress(blake2b_state *S, const uint8_t block[BLAKE2B_BLOCKBYTES], int last) {
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = load64_le(block + 8 * i);
    for (int i = 0; i < 8; i++) {
        v[i] = S->h[i];
        v[i + 8] = blake2b_iv[i];
    }
    v[12] ^= S->t[0];
    v[13] ^= S->t[1];
    if (last) v[14] = ~v[14];  /* final block flag */

    for (int r = 0; r < 12; r++) {
        const uint8_t *s = blake2b_sigma[r % 10];
        B2B_G(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
        B2B_G(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
        B2B_G(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
        B2B_G(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
        B2B_G(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
        B2B_G(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
        B2B_G(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
        B2B_G(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) S->h[i] ^= v[i] ^ v[i + 8];

    /* The message words may be password bytes (H0 input). */
    argon2_secure_wipe(m, sizeof m);
    argon2_secure_wipe(v, sizeof v);
}

static void blake2b_add_counter(blake2b_state *S, uint64_t inc) {
    S->t[0] += inc;
    if (S->t[0] < inc) S->t[1]++;  /* carry into the high word of the 128-bit counter */
}

int blake2b_init(blake2b_state *S, size_t outlen) {
    if (outlen == 0 || outlen > BLAKE2B_OUTBYTES) return -1;
    memset(S, 0, sizeof *S);
    for (int i = 0; i < 8; i++) S->h[i] = blake2b_iv[i];
    /* RFC 7693 section 3.3: parameter block word 0 = 0x0101kknn with key length kk = 0. */
    S->h[0] ^= UINT64_C(0x01010000) ^ (uint64_t)outlen;
    S->outlen = outlen;
    return 0;
}

void blake2b_update(blake2b_state *S, const void *in, size_t inlen) {
    const uint8_t *p = (const uint8_t *)in;
    /* The last block must be compressed with the final flag, and the total length is not
     * known yet, so a full buffer is only compressed once more input shows it is not last. */
    while (inlen > 0) {
        if (S->buflen == BLAKE2B_BLOCKBYTES) {
            blake2b_add_counter(S, BLAKE2B_BLOCKBYTES);
            blake2b_compress(S, S->buf, 0);
            S->buflen = 0;
        }
        /* Whole blocks straight from the input while at least one more byte follows them. */
        while (S->buflen == 0 && inlen > BLAKE2B_BLOCKBYTES) {
            blake2b_add_counter(S, BLAKE2B_BLOCKBYTES);
            blake2b_compress(S, p, 0);
            p += BLAKE2B_BLOCKBYTES;
            inlen -= BLAKE2B_BLOCKBYTES;
        }
        size_t take = BLAKE2B_BLOCKBYTES - S->buflen;
        if (take > inlen) take = inlen;
        memcpy(S->buf + S->buflen, p, take);
        S->buflen += take;
        p += take;
        inlen -= take;
    }
}

void blake2b_final(blake2b_state *S, void *out) {
    uint8_t full[BLAKE2B_OUTBYTES];
    blake2b_add_counter(S, S->buflen);
    /* RFC 7693 section 3.3: the last block is padded with zeros. An empty message is
     * one all-zero block with counter 0. */
    memset(S->buf + S->buflen, 0, BLAKE2B_BLOCKBYTES - S->buflen);
    blake2b_compress(S, S->buf, 1);
    for (int i = 0; i < 8; i++) store64_le(full + 8 * i, S->h[i]);
    memcpy(out, full, S->outlen);
    argon2_secure_wipe(full, sizeof full);
    argon2_secure_wipe(S, sizeof *S);
}

int blake2b(void *out, size_t outlen, const void *in, size_t inlen) {
    blake2b_state S;
    if (blake2b_init(&S, outlen) != 0) return -1;
    blake2b_update(&S, in, inlen);
    blake2b_final(&S, out);
    return 0;
}
