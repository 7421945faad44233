/*
 * koas kernel plugin ABI, version 1: the C view of kernel-api/src/abi.rs.
 *
 * A plugin is a shared library (libkoas_kernel_<name>.so, .dylib on macOS,
 * koas_kernel_<name>.dll on Windows) exporting one symbol,
 * `koas_plugin_entry`, which returns a pointer to a static KoasPluginTable.
 * Everything else crosses the boundary as UTF-8 JSON in KoasBuffers, and a
 * buffer is always freed by the side that allocated it. docs/abi.md gives
 * the JSON shapes of every message.
 */
#ifndef KOAS_KERNEL_H
#define KOAS_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KOAS_ABI_VERSION 1u
#define KOAS_ENTRY_SYMBOL "koas_plugin_entry"
/* Optional: `const char *koas_plugin_api_version(void)` returns a static
 * NUL-terminated string, the koas-kernel-api version the plugin was built
 * with (or the one it follows); a host names it in `koas kernels` and in
 * an ABI mismatch. A plugin without it loads all the same. */
#define KOAS_API_VERSION_SYMBOL "koas_plugin_api_version"
#define KOAS_STATUS_OK 0
#define KOAS_STATUS_ERROR 1

/* Log levels of KoasHostTable.log. */
#define KOAS_LOG_DEBUG 0u
#define KOAS_LOG_INFO 1u
#define KOAS_LOG_WARN 2u
#define KOAS_LOG_ERROR 3u

/* A byte buffer owned by the side that allocated it: `len` bytes of JSON
 * at `ptr`, `cap` bytes allocated (what that side needs to free it). */
typedef struct KoasBuffer {
    uint8_t *ptr;
    size_t len;
    size_t cap;
} KoasBuffer;

/* The host's callbacks, valid for the duration of one run call only. */
typedef struct KoasHostTable {
    uint32_t abi_version;
    void *ctx; /* opaque: hand it back to every callback */
    void (*log)(void *ctx, uint32_t level, const uint8_t *message, size_t len);
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    uint8_t (*is_cancelled)(void *ctx); /* 1 when the run was cancelled */
    /* A JSON call: `header` is an object with a "method" field
     * ("write_file", "append_file", "llm_complete", "llm_complete_many"),
     * `body` the bytes of a file write (empty otherwise). The answer, in a
     * buffer the host allocated, is {"status":"ok","value":...} or
     * {"status":"error","message":"..."}; free it with free_buffer. */
    int32_t (*call)(void *ctx, const uint8_t *header, size_t header_len,
                    const uint8_t *body, size_t body_len, KoasBuffer *out);
    void (*free_buffer)(void *ctx, KoasBuffer buffer);
} KoasHostTable;

/* What koas_plugin_entry returns. `abi_version` comes first whatever the
 * version: a host reads it before anything else. */
typedef struct KoasPluginTable {
    uint32_t abi_version;
    uint32_t kernel_count; /* kernels are indices 0..kernel_count */
    /* Writes {"status":"ok","spec":{...}} for kernel `index` into `out`. */
    int32_t (*describe)(uint32_t index, KoasBuffer *out);
    /* Runs kernel `index` on the JSON run request and writes
     * {"status":"ok",...outputs} or {"status":"error",...} into `out`. */
    int32_t (*run)(uint32_t index, const KoasHostTable *host,
                   const uint8_t *request, size_t request_len, KoasBuffer *out);
    /* Frees a buffer describe or run returned; the host never frees them
     * itself (the allocators may differ). */
    void (*free_buffer)(KoasBuffer buffer);
} KoasPluginTable;

typedef const KoasPluginTable *(*KoasEntryFn)(void);
typedef const char *(*KoasApiVersionFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* KOAS_KERNEL_H */
