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

const char *hyocr_dtype_name(hyocr_dtype dt);
size_t      hyocr_dtype_size(hyocr_dtype dt);
float       hyocr_bf16_to_f32(uint16_t v);
float       hyocr_f16_to_f32(uint16_t v);
/* Converts n elements of any float dtype to fp32. */
void        hyocr_tensor_to_f32(const hyocr_tensor *t, float *out);
int64_t     hyocr_tensor_numel(const hyocr_tensor *t);

G_END_DECLS
