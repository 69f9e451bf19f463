{
  "targets": [
    {
      "target_name": "reexec",
      "sources": ["src/reexec.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"],
      "cflags_c": ["-std=c11"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
