{
  "targets": [
    {
      "target_name": "argon2_reuse",
      "sources": ["src/addon.c", "src/argon2id.c", "src/blake2b.c"],
      "cflags": ["-O3", "-Wall", "-Wextra"],
      "cflags_c": ["-std=c11"],
      "cflags!": ["-O2", "-O0", "-Os"],
      "xcode_settings": {
        "GCC_OPTIMIZATION_LEVEL": "3",
        "OTHER_CFLAGS": ["-std=c11", "-Wall", "-Wextra"]
      },
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
