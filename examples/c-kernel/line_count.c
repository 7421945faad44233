/*
 * A koas kernel written in C, against kernel-api/include/koas_kernel.h:
 * `c_line_count` reads the source input `doc` and returns `line_count`,
 * the number of lines of its text. It shows the whole ABI: the entry
 * table, describe, run, a host log call and buffers freed by their owner.
 *
 *   cc -shared -fPIC -I kernel-api/include -o libkoas_kernel_c_line_count.so \
 *      examples/c-kernel/line_count.c
 *
 * A real kernel would use a JSON library; this one scans the request for
 * the input's "text" string to stay self-contained.
 */
#include "koas_kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SPEC[] =
    "{\"status\":\"ok\",\"spec\":{"
    "\"name\":\"c_line_count\",\"version\":\"1.0.0\",\"stage\":\"example\","
    "\"description\":\"Counts the lines of the document (a kernel written in C)\","
    "\"inputs\":[{\"artifact\":\"doc\",\"required\":true}],"
    "\"outputs\":[{\"artifact\":\"line_count\",\"file\":\"out/line_count.json\"}]}}";

/* A buffer the host will hand back to plugin_free. */
static KoasBuffer buffer_of(const char *text) {
    KoasBuffer b;
    size_t n = strlen(text);
    b.ptr = (uint8_t *)malloc(n ? n : 1);
    b.len = 0;
    b.cap = 0;
    if (b.ptr != NULL) {
        memcpy(b.ptr, text, n);
        b.len = n;
        b.cap = n ? n : 1;
    }
    return b;
}

static int32_t plugin_describe(uint32_t index, KoasBuffer *out) {
    if (index != 0) {
        *out = buffer_of("{\"status\":\"error\",\"message\":\"no kernel at this index\"}");
        return KOAS_STATUS_ERROR;
    }
    *out = buffer_of(SPEC);
    return out->ptr != NULL ? KOAS_STATUS_OK : KOAS_STATUS_ERROR;
}

/* Counts the lines of the JSON string that starts at `s` (just after its
 * opening quote): escaped newlines are "\n" in JSON. */
static long count_lines(const char *s, const char *end) {
    long lines = 0;
    int empty = 1, last_newline = 0;
    while (s < end && *s != '"') {
        empty = 0;
        last_newline = 0;
        if (*s == '\\' && s + 1 < end) {
            if (s[1] == 'n') {
                lines++;
                last_newline = 1;
            }
            s += 2;
            continue;
        }
        s++;
    }
    /* A last line without a newline still counts. */
    return (empty || last_newline) ? lines : lines + 1;
}

static int32_t plugin_run(uint32_t index, const KoasHostTable *host,
                          const uint8_t *request, size_t request_len, KoasBuffer *out) {
    const char *req = (const char *)request;
    const char *end = req + request_len;
    const char *key = "\"text\":\"";
    const char *at = NULL;
    char answer[256];
    long lines;
    (void)index;
    /* The request is {"config":{...},"inputs":{"doc":{"path":...,"text":"..."}}}. */
    for (const char *p = req; p + strlen(key) <= end; p++) {
        if (memcmp(p, key, strlen(key)) == 0) {
            at = p + strlen(key);
            break;
        }
    }
    if (at == NULL) {
        *out = buffer_of("{\"status\":\"error\",\"kind\":\"invalid_input\","
                         "\"message\":\"input `doc` has no text\"}");
        return KOAS_STATUS_ERROR;
    }
    lines = count_lines(at, end);
    snprintf(answer, sizeof answer, "counted %ld lines", lines);
    host->log(host->ctx, KOAS_LOG_INFO, (const uint8_t *)answer, strlen(answer));
    snprintf(answer, sizeof answer,
             "{\"status\":\"ok\",\"artifacts\":{\"line_count\":%ld},"
             "\"summary\":\"%ld lines\",\"warnings\":[]}",
             lines, lines);
    *out = buffer_of(answer);
    return out->ptr != NULL ? KOAS_STATUS_OK : KOAS_STATUS_ERROR;
}

static void plugin_free(KoasBuffer buffer) { free(buffer.ptr); }

static const KoasPluginTable TABLE = {
    KOAS_ABI_VERSION, 1, plugin_describe, plugin_run, plugin_free,
};

const KoasPluginTable *koas_plugin_entry(void) { return &TABLE; }
