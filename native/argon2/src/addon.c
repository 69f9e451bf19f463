/*
 * N-API binding of argon2id.c for the project's password workers.
 *
 * Each addon instance (one per Node.js environment, i.e. per worker thread, thanks to
 * NAPI_MODULE_INIT) owns one 64-byte-aligned memory area that every hashRaw() call reuses.
 * Argon2 writes each block before reading it (RFC 9106 section 3.4), so the area is never
 * zeroed: that saves the page faults and kernel zeroing of a fresh 19 MiB mapping per hash,
 * and the wipe on free, which @node-rs/argon2 pays on every call.
 *
 * exports:
 *   hashRaw(password: Buffer|Uint8Array, salt: Buffer|Uint8Array, t, mKiB, p, outLen,
 *           mode?: boolean | "scalar" | "avx2" | "avx512"): Buffer
 *                     mode (tests, benchmarks): undefined/false the best compression
 *                     function here, true/"scalar" the portable one, else that SIMD one
 *   release(): void   frees the area (an idle worker gives its memory back)
 *   simd: string      "avx512", "avx2" or "scalar", the compression function hashRaw uses
 *   _blake2b(data: Buffer|Uint8Array, outLen: number): Buffer
 *                     test hook for test-vectors.mjs (RFC 7693 vectors); not an API
 */
#define _DEFAULT_SOURCE 1 /* madvise() under -std=c11 */

#include <math.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __linux__
#include <sys/mman.h>
#endif

#include "argon2id.h"
#include "blake2b.h"

#define MAX_OUTLEN 1024 /* the tag is computed on the stack, then copied into a Buffer */

typedef struct {
    void *area;
    size_t area_bytes;
} instance;

/* Areas of 2 MiB and more are aligned to 2 MiB and, on Linux, offered to transparent
 * huge pages: Argon2's reference reads jump across the whole area, and with 4 KiB pages
 * 19 MiB is ~4900 pages, more than the second-level TLB holds. */
#define HUGE_PAGE_BYTES ((size_t)2 << 20)

static void free_area(instance *inst) {
    free(inst->area);
    inst->area = NULL;
    inst->area_bytes = 0;
}

/* Makes the area at least `need` bytes. Contents are not preserved (nor needed). */
static int ensure_area(instance *inst, size_t need) {
    if (inst->area != NULL && inst->area_bytes >= need) return 0;
    /* Free first: the old contents are useless and this keeps the peak at one area. */
    free_area(inst);
    size_t align = need >= HUGE_PAGE_BYTES ? HUGE_PAGE_BYTES : ARGON2ID_AREA_ALIGN;
    size_t size = (need + align - 1) / align * align; /* aligned_alloc wants a multiple */
    void *p = aligned_alloc(align, size);
    if (p == NULL) return -1;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == HUGE_PAGE_BYTES) (void)madvise(p, size, MADV_HUGEPAGE); /* advisory only */
#endif
    inst->area = p;
    inst->area_bytes = size;
    return 0;
}

static void instance_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    instance *inst = (instance *)data;
    if (inst == NULL) return;
    free_area(inst);
    free(inst);
}

/* A failed N-API call with no JavaScript exception pending becomes a generic Error. */
static void throw_napi_failure(napi_env env, const char *what) {
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) == napi_ok && pending) return;
    char msg[160];
    snprintf(msg, sizeof msg, "argon2_reuse: internal N-API failure (%s)", what);
    napi_throw_error(env, NULL, msg);
}

#define NAPI_CALL(env, call)                                 \
    do {                                                     \
        if ((call) != napi_ok) {                             \
            throw_napi_failure((env), #call);                \
            return NULL;                                     \
        }                                                    \
    } while (0)

/* Reads a Buffer or Uint8Array argument. Returns 0, or -1 after throwing a TypeError. */
static int get_bytes(napi_env env, napi_value v, const char *name, const uint8_t **data, size_t *len) {
    bool is_ta = false;
    if (napi_is_typedarray(env, v, &is_ta) == napi_ok && is_ta) {
        napi_typedarray_type type;
        size_t length;
        void *ptr;
        if (napi_get_typedarray_info(env, v, &type, &length, &ptr, NULL, NULL) == napi_ok &&
            type == napi_uint8_array) {
            *data = (const uint8_t *)ptr;
            *len = length;
            return 0;
        }
    }
    char msg[96];
    snprintf(msg, sizeof msg, "%s must be a Buffer or Uint8Array", name);
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
    return -1;
}

/* Reads an integer argument in [min, max]. Returns 0, or -1 after throwing. */
static int get_uint(napi_env env, napi_value v, const char *name, double min, double max, uint32_t *out) {
    napi_valuetype type;
    char msg[128];
    if (napi_typeof(env, v, &type) != napi_ok || type != napi_number) {
        snprintf(msg, sizeof msg, "%s must be a number", name);
        napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
        return -1;
    }
    double d;
    if (napi_get_value_double(env, v, &d) != napi_ok) {
        throw_napi_failure(env, "napi_get_value_double");
        return -1;
    }
    if (!isfinite(d) || d != floor(d) || d < min || d > max) {
        snprintf(msg, sizeof msg, "%s must be an integer in %.0f..%.0f", name, min, max);
        napi_throw_range_error(env, "ERR_OUT_OF_RANGE", msg);
        return -1;
    }
    *out = (uint32_t)d;
    return 0;
}

/* Reads hashRaw's optional `mode` (tests and benchmarks): undefined or false is the best
 * compression function available, true or "scalar" the portable one, "avx2" / "avx512" that
 * SIMD one. Returns 0, or -1 after throwing: TypeError for an unknown mode, Error (code
 * ERR_ARGON2_SIMD_UNAVAILABLE) when this CPU or OS cannot run the requested one. */
static int get_mode(napi_env env, napi_value v, argon2id_impl *impl) {
    napi_valuetype type;
    if (napi_typeof(env, v, &type) != napi_ok) {
        throw_napi_failure(env, "napi_typeof");
        return -1;
    }
    *impl = ARGON2ID_IMPL_AUTO;
    if (type == napi_undefined) return 0;
    if (type == napi_boolean) {
        bool force = false;
        if (napi_get_value_bool(env, v, &force) != napi_ok) {
            throw_napi_failure(env, "napi_get_value_bool");
            return -1;
        }
        if (force) *impl = ARGON2ID_IMPL_SCALAR; /* the original `forceScalar` flag */
        return 0;
    }
    char name[16] = "";
    size_t len = 0;
    bool known = false;
    if (type == napi_string && napi_get_value_string_utf8(env, v, name, sizeof name, &len) == napi_ok &&
        len == strlen(name)) { /* a NUL inside would fool strcmp */
        known = true;
        if (strcmp(name, "scalar") == 0) *impl = ARGON2ID_IMPL_SCALAR;
        else if (strcmp(name, "avx2") == 0) *impl = ARGON2ID_IMPL_AVX2;
        else if (strcmp(name, "avx512") == 0) *impl = ARGON2ID_IMPL_AVX512;
        else known = false;
    }
    if (!known) {
        napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                              "mode must be undefined, a boolean (true: scalar), 'scalar', 'avx2' or 'avx512'");
        return -1;
    }
    if (!argon2id_impl_available(*impl)) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "hashRaw: the '%s' compression function needs %s, which this CPU or OS lacks (best here: '%s')",
                 name, *impl == ARGON2ID_IMPL_AVX512 ? "AVX-512F and AVX-512VL" : "AVX2", argon2id_impl_name());
        napi_throw_error(env, "ERR_ARGON2_SIMD_UNAVAILABLE", msg);
        return -1;
    }
    return 0;
}

static napi_value hash_raw(napi_env env, napi_callback_info info) {
    size_t argc = 7;
    napi_value argv[7];
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 6) {
        napi_throw_type_error(env, "ERR_MISSING_ARGS",
                              "hashRaw(password, salt, t, mKiB, p, outLen[, mode]) takes 6 arguments");
        return NULL;
    }

    const uint8_t *pwd, *salt;
    size_t pwdlen, saltlen;
    uint32_t t, m, p, outlen;
    if (get_bytes(env, argv[0], "password", &pwd, &pwdlen) != 0) return NULL;
    if (get_bytes(env, argv[1], "salt", &salt, &saltlen) != 0) return NULL;
    /* RFC 9106 section 3.1 ranges; the tag is capped at MAX_OUTLEN here. */
    if (get_uint(env, argv[2], "t (passes)", 1, 4294967295.0, &t) != 0) return NULL;
    if (get_uint(env, argv[3], "mKiB (memory cost)", 8, 4294967295.0, &m) != 0) return NULL;
    if (get_uint(env, argv[4], "p (lanes)", 1, ARGON2ID_MAX_LANES, &p) != 0) return NULL;
    if (get_uint(env, argv[5], "outLen", ARGON2ID_MIN_OUTLEN, MAX_OUTLEN, &outlen) != 0) return NULL;
    if ((uint64_t)pwdlen > UINT32_MAX) {
        napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "password must be at most 2^32-1 bytes");
        return NULL;
    }
    if (saltlen < ARGON2ID_MIN_SALTLEN || (uint64_t)saltlen > UINT32_MAX) {
        napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "salt must be 8..2^32-1 bytes long");
        return NULL;
    }
    if ((uint64_t)m < 8 * (uint64_t)p) {
        napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "mKiB must be at least 8 * p (RFC 9106 section 3.1)");
        return NULL;
    }

    argon2id_impl impl = ARGON2ID_IMPL_AUTO;
    if (argc >= 7 && get_mode(env, argv[6], &impl) != 0) return NULL;

    instance *inst = NULL;
    NAPI_CALL(env, napi_get_instance_data(env, (void **)&inst));
    if (inst == NULL) {
        napi_throw_error(env, NULL, "argon2_reuse: addon instance data missing");
        return NULL;
    }
    const size_t need = argon2id_area_bytes(m, p);
    if (ensure_area(inst, need) != 0) {
        napi_throw_error(env, "ERR_MEMORY_ALLOCATION_FAILED", "argon2_reuse: cannot allocate the memory area");
        return NULL;
    }

    uint8_t tag[MAX_OUTLEN];
    int rc = argon2id_raw_impl(pwd, pwdlen, salt, saltlen, t, m, p, tag, outlen, inst->area,
                               inst->area_bytes, impl);
    if (rc != ARGON2ID_OK) {
        /* The checks above should make this unreachable; report rather than crash. */
        char msg[160];
        snprintf(msg, sizeof msg, "argon2id: %s", argon2id_error_message(rc));
        napi_throw_range_error(env, "ERR_OUT_OF_RANGE", msg);
        return NULL;
    }

    napi_value result;
    napi_status st = napi_create_buffer_copy(env, outlen, tag, NULL, &result);
    argon2_secure_wipe(tag, sizeof tag);
    if (st != napi_ok) {
        throw_napi_failure(env, "napi_create_buffer_copy");
        return NULL;
    }
    return result;
}

/* Test hook: plain BLAKE2b of the bytes, outLen 1..64. */
static napi_value blake2b_export(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2];
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 2) {
        napi_throw_type_error(env, "ERR_MISSING_ARGS", "_blake2b(data, outLen) takes 2 arguments");
        return NULL;
    }
    const uint8_t *data;
    size_t len;
    uint32_t outlen;
    if (get_bytes(env, argv[0], "data", &data, &len) != 0) return NULL;
    if (get_uint(env, argv[1], "outLen", 1, BLAKE2B_OUTBYTES, &outlen) != 0) return NULL;
    uint8_t digest[BLAKE2B_OUTBYTES];
    blake2b(digest, outlen, data, len);
    napi_value result;
    NAPI_CALL(env, napi_create_buffer_copy(env, outlen, digest, NULL, &result));
    return result;
}

static napi_value release(napi_env env, napi_callback_info info) {
    (void)info;
    instance *inst = NULL;
    NAPI_CALL(env, napi_get_instance_data(env, (void **)&inst));
    if (inst != NULL) free_area(inst);
    return NULL; /* undefined */
}

NAPI_MODULE_INIT() {
    /* A second load of the module in the same environment keeps the existing instance:
     * napi_set_instance_data would drop the old one without finalizing it. */
    instance *inst = NULL;
    NAPI_CALL(env, napi_get_instance_data(env, (void **)&inst));
    if (inst == NULL) {
        inst = (instance *)calloc(1, sizeof *inst);
        if (inst == NULL) {
            napi_throw_error(env, NULL, "argon2_reuse: out of memory");
            return NULL;
        }
        if (napi_set_instance_data(env, inst, instance_finalize, NULL) != napi_ok) {
            free(inst);
            throw_napi_failure(env, "napi_set_instance_data");
            return NULL;
        }
    }

    napi_value fn_hash, fn_release, fn_blake2b, simd;
    NAPI_CALL(env, napi_create_function(env, "hashRaw", NAPI_AUTO_LENGTH, hash_raw, NULL, &fn_hash));
    NAPI_CALL(env, napi_create_function(env, "release", NAPI_AUTO_LENGTH, release, NULL, &fn_release));
    NAPI_CALL(env, napi_create_function(env, "_blake2b", NAPI_AUTO_LENGTH, blake2b_export, NULL, &fn_blake2b));
    NAPI_CALL(env, napi_create_string_utf8(env, argon2id_impl_name(), NAPI_AUTO_LENGTH, &simd));
    NAPI_CALL(env, napi_set_named_property(env, exports, "hashRaw", fn_hash));
    NAPI_CALL(env, napi_set_named_property(env, exports, "release", fn_release));
    NAPI_CALL(env, napi_set_named_property(env, exports, "simd", simd));
    NAPI_CALL(env, napi_set_named_property(env, exports, "_blake2b", fn_blake2b));
    return exports;
}
