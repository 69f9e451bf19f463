/*
 * BLAKE2b (RFC 7693), unkeyed, with an output length of 1..64 bytes.
 *
 * Written for native/argon2: Argon2 (RFC 9106 section 3.2) uses BLAKE2b as its hash H
 * for H0 and inside the variable-length hash H'. Only the unkeyed form is needed
 * (Argon2 passes its secret, if any, as part of the message), so no key support.
 */
#ifndef NATIVE_ARGON2_BLAKE2B_H
#define NATIVE_ARGON2_BLAKE2B_H

#include <stddef.h>
#include <stdint.h>

#define BLAKE2B_BLOCKBYTES 128
#define BLAKE2B_OUTBYTES 64

typedef struct {
    uint64_t h[8];                    /* chained state (RFC 7693 section 3.3, "h") */
    uint64_t t[2];                    /* 128-bit byte counter, low word first */
    uint8_t buf[BLAKE2B_BLOCKBYTES];  /* pending input, compressed once more data arrives */
    size_t buflen;
    size_t outlen;
} blake2b_state;

/* Returns 0, or -1 when outlen is not in 1..64. */
int blake2b_init(blake2b_state *S, size_t outlen);
void blake2b_update(blake2b_state *S, const void *in, size_t inlen);
/* Writes S->outlen bytes to out and wipes the state. */
void blake2b_final(blake2b_state *S, void *out);
/* One-shot convenience: returns 0, or -1 for a bad outlen. */
int blake2b(void *out, size_t outlen, const void *in, size_t inlen);

/* Overwrites memory in a way the compiler may not drop as a dead store. */
void argon2_secure_wipe(void *p, size_t n);

#endif
