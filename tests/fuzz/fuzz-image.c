/* hyocr fuzzing: decoding an image the way a job does (fuzz-image.h). */
#include "fuzz.h"
#include "fuzz-image.h"
#include "error.h"
#include "image.h"

#include <string.h>

void fuzz_image(const uint8_t *in, size_t size, const char *magic, size_t magic_len)
{
    /* exactly size bytes, so a read past the end is a sanitizer finding */
    g_autofree uint8_t *data = g_malloc(MAX(size, 1));
    if (size) memcpy(data, in, size);
    memcpy(data, magic, MIN(size, magic_len));
    for (int pass = 0; pass < (size && (data[size - 1] & 1) ? 2 : 1); pass++) {
        /* a tenth of the default pixel limit: what a decoder holds beyond its 48 MB RGB buffer then
         * stands out against the harness's malloc limit (png.options, jpeg.options) */
        hyocr_image_options o = { .max_decode_pixels = 16 << 20, .max_side = pass ? 64 : 0 };
        g_autoptr(GError) err = NULL;
        g_autoptr(hyocr_image) img = hyocr_image_load_from_memory(data, size, "in", &o, &err);
        fuzz_require(!img == !!err, "an image and an error, or neither");
        if (err) {
            fuzz_note(err);
            fuzz_require(err->domain == HYOCR_ERROR && g_str_has_prefix(err->message, "in: "), "message: %s",
                         err->message);
            continue;
        }
        fuzz_require(img->width >= 1 && img->height >= 1, "%d×%d image", img->width, img->height);
        fuzz_require(!pass || (img->width <= 64 && img->height <= 64), "max_side ignored: %d×%d", img->width,
                     img->height);
        /* every pixel is readable */
        unsigned sum = 0;
        for (size_t i = 0; i < (size_t)img->width * img->height * 3; i++) sum += img->rgb[i];
        (void)sum;
    }
}
