/* Fuzzes the JPEG (libjpeg-turbo) decoder under hyocr_image_load_from_memory, with EXIF
 * orientation and the optional pre-scale: see fuzz-image.c. */
#include "fuzz.h"
#include "fuzz-image.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_image(data, size, "\xFF\xD8\xFF", 3);
    return 0;
}
