/* hyocr — the engine's types that its public API (hyocr.h, memplan.h) and the
 * backend seam (backend.h, private to the engine) both speak: the compute type,
 * the kind of backend, and its memory figures. */
#pragma once
#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef enum {
    HYOCR_BACKEND_CPU,
    HYOCR_BACKEND_CUDA,
    HYOCR_BACKEND_NONE,   /* hyocr_engine_backend_kind: the engine holds no backend */
} hyocr_backend_kind;

typedef enum {
    HYOCR_COMPUTE_F32,   /* CPU */
    HYOCR_COMPUTE_F16,
    HYOCR_COMPUTE_BF16,
} hyocr_compute_dtype;

typedef struct {
    int64_t total;          /* device (or system RAM) total, bytes */
    int64_t free;           /* device (or system) free, bytes */
    int64_t weights;        /* this process: weights */
    int64_t kv_reserved;    /* KV pool allocated */
    int64_t kv_used;        /* KV blocks in use × block bytes (filled by the engine) */
    int64_t workspace;      /* activations / scratch currently allocated */
    int64_t peak;           /* high-water mark of everything this backend allocated */
    int64_t limit;          /* the memory limit it enforces, bytes (a fraction resolved at init); 0 = none */
} hyocr_mem_info;

G_END_DECLS
