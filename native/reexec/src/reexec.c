/*
 * execve(2) for Node.js 20, which has no process.execve: the service restarts itself in place
 * (same pid, same open descriptors, same parent) when a setting only takes effect at program load,
 * such as OPENSSL_ia32cap (src/keys/openssl-reexec.ts, docs/decisions.md).
 *
 * exports:
 *   execve(file: string, argv: string[], env: string[]): never
 *       replaces the process image; returns only by throwing an Error whose code is the errno
 *       name when the kernel refused (the process is then unchanged and goes on).
 *
 * Node marks its standard streams close-on-exec at start-up (so child processes do not inherit
 * them by accident); the new image needs them, so fds 0-2 are handed over open, and marked again
 * when execve fails. Every other descriptor Node opened is close-on-exec already.
 */
#define _DEFAULT_SOURCE 1

#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_STRINGS 65536
#define MAX_STRING_BYTES (1024 * 1024)

static const char *errno_name(int err) {
    switch (err) {
    case E2BIG: return "E2BIG";
    case EACCES: return "EACCES";
    case EINVAL: return "EINVAL";
    case ELOOP: return "ELOOP";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOENT: return "ENOENT";
    case ENOEXEC: return "ENOEXEC";
    case ENOMEM: return "ENOMEM";
    case ENOTDIR: return "ENOTDIR";
    case EPERM: return "EPERM";
    case ETXTBSY: return "ETXTBSY";
    default: return "EEXECVE";
    }
}

static void free_strings(char **list) {
    if (list == NULL) return;
    for (char **p = list; *p != NULL; p++) free(*p);
    free(list);
}

/* A NULL-terminated copy of a JavaScript array of strings, or NULL (with a pending exception). */
static char **strings_of(napi_env env, napi_value array, const char *what) {
    bool is_array = false;
    uint32_t length = 0;
    if (napi_is_array(env, array, &is_array) != napi_ok || !is_array || napi_get_array_length(env, array, &length) != napi_ok || length > MAX_STRINGS) {
        napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", what);
        return NULL;
    }
    char **list = calloc((size_t)length + 1, sizeof(char *));
    if (list == NULL) {
        napi_throw_error(env, "ENOMEM", "out of memory");
        return NULL;
    }
    for (uint32_t i = 0; i < length; i++) {
        napi_value item;
        size_t bytes = 0;
        if (napi_get_element(env, array, i, &item) != napi_ok || napi_get_value_string_utf8(env, item, NULL, 0, &bytes) != napi_ok || bytes > MAX_STRING_BYTES) {
            free_strings(list);
            napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", what);
            return NULL;
        }
        list[i] = malloc(bytes + 1);
        if (list[i] == NULL || napi_get_value_string_utf8(env, item, list[i], bytes + 1, &bytes) != napi_ok || strlen(list[i]) != bytes) {
            /* strlen differs when the string holds a NUL, which execve cannot pass. */
            free_strings(list);
            napi_throw_type_error(env, "ERR_INVALID_ARG_VALUE", what);
            return NULL;
        }
    }
    return list;
}

static napi_value do_execve(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value args[3];
    if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != napi_ok || argc != 3) {
        napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "execve(file, argv, env) takes three arguments");
        return NULL;
    }
    char **file = NULL, **argv = NULL, **envp = NULL;
    napi_value file_list;
    if (napi_create_array_with_length(env, 1, &file_list) != napi_ok || napi_set_element(env, file_list, 0, args[0]) != napi_ok) return NULL;
    file = strings_of(env, file_list, "file must be a string without NUL");
    if (file != NULL) argv = strings_of(env, args[1], "argv must be an array of strings without NUL");
    if (argv != NULL) envp = strings_of(env, args[2], "env must be an array of strings without NUL");
    if (envp != NULL) {
        int stdio_flags[3];
        for (int fd = 0; fd < 3; fd++) {
            stdio_flags[fd] = fcntl(fd, F_GETFD);
            if (stdio_flags[fd] >= 0 && (stdio_flags[fd] & FD_CLOEXEC)) fcntl(fd, F_SETFD, stdio_flags[fd] & ~FD_CLOEXEC);
        }
        execve(file[0], argv, envp);
        /* Only reached when the kernel refused: put the flags back, nothing else has changed. */
        int err = errno;
        for (int fd = 0; fd < 3; fd++) {
            if (stdio_flags[fd] >= 0) fcntl(fd, F_SETFD, stdio_flags[fd]);
        }
        napi_throw_error(env, errno_name(err), strerror(err));
    }
    free_strings(file);
    free_strings(argv);
    free_strings(envp);
    return NULL;
}

NAPI_MODULE_INIT() {
    napi_value fn;
    if (napi_create_function(env, "execve", NAPI_AUTO_LENGTH, do_execve, NULL, &fn) != napi_ok) return NULL;
    if (napi_set_named_property(env, exports, "execve", fn) != napi_ok) return NULL;
    return exports;
}
