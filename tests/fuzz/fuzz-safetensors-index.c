/* Fuzzes a sharded checkpoint's index (model.safetensors.index.json read by
 * hyocr_safetensors_open_dir) against two fixed, valid shards beside it; the
 * shards' own format is fuzz-safetensors' business. */
#include "fuzz.h"
#include "error.h"
#include "safetensors.h"

#include <string.h>

static void write_shard(const char *name, const char *header)
{
    size_t hlen = strlen(header);
    g_autoptr(GByteArray) b = g_byte_array_new();
    uint64_t le = GUINT64_TO_LE((uint64_t)hlen);
    g_byte_array_append(b, (const guint8 *)&le, 8);
    g_byte_array_append(b, (const guint8 *)header, (guint)hlen);
    static const float values[5] = { 1, 2, 3, 4, 5 };
    g_byte_array_append(b, (const guint8 *)values, sizeof values);
    g_free(fuzz_write(name, b->data, b->len));
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init();
    write_shard("model-00001-of-00002.safetensors",
                "{\"vit.a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"vit.b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}");
    write_shard("model-00002-of-00002.safetensors",
                "{\"__metadata__\":{\"format\":\"pt\"},\"model.c\":{\"dtype\":\"BF16\",\"shape\":[2,4],"
                "\"data_offsets\":[0,16]},\"model.u\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[16,20]}}");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_free(fuzz_write("model.safetensors.index.json", data, size));
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_safetensors) st = hyocr_safetensors_open_dir(fuzz_dir(), &err);
    fuzz_require(!st == !!err, "tensors and an error, or neither");
    if (err) {
        fuzz_note(err);
        fuzz_require(err->domain == HYOCR_ERROR, "foreign error: %s", err->message);
        return 0;
    }
    fuzz_require(hyocr_safetensors_n_files(st) >= 1 && hyocr_safetensors_n_files(st) <= 2, "%d files",
                 hyocr_safetensors_n_files(st));
    for (size_t i = 0; i < hyocr_safetensors_count(st); i++) {
        const hyocr_tensor *t = hyocr_safetensors_at(st, i);
        fuzz_require(hyocr_safetensors_find(st, t->name) == t, "tensor %s not found by name", t->name);
    }
    return 0;
}
