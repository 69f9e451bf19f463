/*
 * Argon2id, version 0x13, per RFC 9106, with a caller-provided memory area.
 *
 * The point of this implementation (see native/argon2/README.md) is that the caller keeps
 * one memory area per thread and passes it to every call: Argon2 writes every block of
 * the memory matrix before it reads it (RFC 9106 section 3.4: each block is computed from
 * blocks already computed in this call), so stale contents of an earlier call are never
 * observed and the area needs no zeroing.
 *
 * Only what the project needs: type Argon2id (y = 2), no secret K, no associated data X.
 */
#ifndef NATIVE_ARGON2_ARGON2ID_H
#define NATIVE_ARGON2_ARGON2ID_H

#include <stddef.h>
#include <stdint.h>

#define ARGON2ID_VERSION 0x13
#define ARGON2ID_TYPE 2
#define ARGON2ID_BLOCK_BYTES 1024
#define ARGON2ID_AREA_ALIGN 64

/* Parameter limits of RFC 9106 section 3.1 that this code enforces. */
#define ARGON2ID_MIN_OUTLEN 4
#define ARGON2ID_MIN_SALTLEN 8
#define ARGON2ID_MAX_LANES 0xFFFFFFu

enum {
    ARGON2ID_OK = 0,
    ARGON2ID_ERR_NULL = -1,        /* NULL pointer with a non-zero length */
    ARGON2ID_ERR_OUTLEN = -2,      /* output length not in 4..2^32-1 */
    ARGON2ID_ERR_PWDLEN = -3,      /* password longer than 2^32-1 bytes */
    ARGON2ID_ERR_SALTLEN = -4,     /* salt not in 8..2^32-1 bytes */
    ARGON2ID_ERR_PASSES = -5,      /* t < 1 */
    ARGON2ID_ERR_LANES = -6,       /* p not in 1..2^24-1 */
    ARGON2ID_ERR_MEMORY_COST = -7, /* m < 8p */
    ARGON2ID_ERR_AREA = -8,        /* area smaller than argon2id_area_bytes() or not 64-byte aligned */
    ARGON2ID_ERR_IMPL = -9,        /* requested compression function not available on this CPU */
};

typedef enum {
    ARGON2ID_IMPL_AUTO = 0,   /* fastest available: AVX-512, else AVX2, else portable C */
    ARGON2ID_IMPL_SCALAR = 1, /* portable C, for testing the SIMD paths against */
    ARGON2ID_IMPL_AVX2 = 2,
    ARGON2ID_IMPL_AVX512 = 3, /* AVX-512F + AVX-512VL */
} argon2id_impl;

/*
 * Bytes of memory area a call with these costs needs: m' * 1024 with
 * m' = 4p * floor(m / 4p) (RFC 9106 section 3.2 step 3). 0 when m < 8p or p is out of range.
 */
size_t argon2id_area_bytes(uint32_t m_kib, uint32_t p);

/* The compression function ARGON2ID_IMPL_AUTO picks on this CPU: "avx512", "avx2" or "scalar". */
const char *argon2id_impl_name(void);

/* 1 when this CPU and OS can run the compression function `impl` (AUTO and SCALAR: always). */
int argon2id_impl_available(argon2id_impl impl);

/* A short English description of an error code. */
const char *argon2id_error_message(int code);

/*
 * Computes the Argon2id tag of (pwd, salt) with t passes, m_kib KiB of memory and p lanes
 * into out[0..outlen). memory must be 64-byte aligned and hold at least
 * argon2id_area_bytes(m_kib, p) bytes; its prior contents do not matter and it is left
 * holding the final memory matrix (not wiped: callers reuse it). Returns ARGON2ID_OK or a
 * negative ARGON2ID_ERR_* code, in which case nothing was computed.
 */
int argon2id_raw(const uint8_t *pwd, size_t pwdlen, const uint8_t *salt, size_t saltlen,
                 uint32_t t, uint32_t m_kib, uint32_t p, uint8_t *out, size_t outlen,
                 void *memory, size_t memory_bytes);

/* The same, with the compression function chosen by the caller (for tests). */
int argon2id_raw_impl(const uint8_t *pwd, size_t pwdlen, const uint8_t *salt, size_t saltlen,
                      uint32_t t, uint32_t m_kib, uint32_t p, uint8_t *out, size_t outlen,
                      void *memory, size_t memory_bytes, argon2id_impl impl);

#endif
