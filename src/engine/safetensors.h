/* hyocr — safetensors reader: one file or shards + index, mmap'd, never copied. */
#pragma once
#include <glib.h>
#include <stdint.h>
#include <stddef.h>

G_BEGIN_DECLS

typedef enum {
    HYOCR_DTYPE_F32,
    HYOCR_DTYPE_F16,
    HYOCR_DTYPE_BF16,
    HYOCR_DTYPE_I64,   /* accepted in headers (never used by the model) */
    HYOCR_DTYPE_COUNT,
} hyocr_dtype;

#define HYOCR_MAX_DIMS 4

typedef struct {
    char        *name;            /* name as stored in the file */
    hyocr_dtype  dtype;
    int          n_dims;
    int64_t      shape[HYOCR_MAX_DIMS];
    const void  *data;            /* points into the mapping */
    size_t       nbytes;
    const char  *file;            /* path of the shard holding it */
} hyocr_tensor;

typedef struct hyocr_safetensors hyocr_safetensors;

/* dir holds model.safetensors, or model.safetensors.index.json + shards. */
hyocr_safetensors  *hyocr_safetensors_open_dir(const char *dir, GError **error);
/* One file; used by tests and by the index loader. */
hyocr_safetensors  *hyocr_safetensors_open_file(const char *path, GError **error);
void                hyocr_safetensors_free(hyocr_safetensors *st);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_safetensors, hyocr_safetensors_free)

size_t              hyocr_safetensors_count(const hyocr_safetensors *st);
const hyocr_tensor *hyocr_safetensors_at(const hyocr_safetensors *st, size_t i);
const hyocr_tensor *hyocr_safetensors_find(const hyocr_safetensors *st, const char *name);

/* Tensors whose dtype is a valid safetensors dtype that hyocr cannot compute with (U8, I32, F64,
 * F8_*, BOOL, …): their byte ranges are validated like the others, but they are not listed by
 * _count/_at/_find. These let a caller say "tensor X has dtype U8" instead of "X is missing". */
size_t      hyocr_safetensors_count_other(const hyocr_safetensors *st);
const char *hyocr_safetensors_other_name(const hyocr_safetensors *st, size_t i);
/* The dtype string of such a tensor, or NULL when name is not one of them. */
const char *hyocr_safetensors_other_dtype(const hyocr_safetensors *st, const char *name);
/* Number of files mapped (1, or the shard count). */
int         hyocr_safetensors_n_files(const hyocr_safetensors *st);

/* t's bytes have been copied where they are used: their pages leave the process's resident set
 * (they stay in the page cache, and a later read maps them again), so a loaded model does not also
 * count the checkpoint file in its RSS. */
void        hyocr_tensor_release(const hyocr_tensor *t);

const char *hyocr_dtype_name(hyocr_dtype dt);
size_t      hyocr_dtype_size(hyocr_dtype dt);
float       hyocr_bf16_to_f32(uint16_t v);
float       hyocr_f16_to_f32(uint16_t v);
/* Converts all hyocr_tensor_numel(t) elements to fp32 (I64 values are cast). t->data may be
 * unaligned (safetensors offsets need not be multiples of the element size); this handles it. */
void        hyocr_tensor_to_f32(const hyocr_tensor *t, float *out);
int64_t     hyocr_tensor_numel(const hyocr_tensor *t);

G_END_DECLS
