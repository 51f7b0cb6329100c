/* Fuzzes the safetensors reader on one file (hyocr_safetensors_open_file), then
 * reads every tensor it accepted to the last byte. */
#include "fuzz.h"
#include "error.h"
#include "safetensors.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *path = fuzz_write("model.safetensors", data, size);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_safetensors) st = hyocr_safetensors_open_file(path, &err);
    fuzz_require(!st == !!err, "tensors and an error, or neither");
    if (err) {
        fuzz_note(err);
        fuzz_require(err->domain == HYOCR_ERROR, "foreign error: %s", err->message);
        return 0;
    }
    for (size_t i = 0; i < hyocr_safetensors_count(st); i++) {
        const hyocr_tensor *t = hyocr_safetensors_at(st, i);
        fuzz_require(hyocr_safetensors_find(st, t->name) == t, "tensor %s not found by name", t->name);
        fuzz_require(t->nbytes == (size_t)hyocr_tensor_numel(t) * hyocr_dtype_size(t->dtype), "size of %s", t->name);
        fuzz_require(t->nbytes <= size, "%s: %zu bytes in a %zu-byte file", t->name, t->nbytes, size);
        g_autofree float *f = g_new(float, hyocr_tensor_numel(t) + 1);
        hyocr_tensor_to_f32(t, f);
    }
    for (size_t i = 0; i < hyocr_safetensors_count_other(st); i++)
        fuzz_require(hyocr_safetensors_other_dtype(st, hyocr_safetensors_other_name(st, i)), "other dtype");
    return 0;
}
