/* Fuzzes the TIFF reader under the document API (open, page sizes, rendering): see
 * fuzz-document.c. */
#include "fuzz.h"
#include "fuzz-document.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const fuzz_magic magic[] = { { 0, "II*\0", 4 } };
    fuzz_document(data, size, magic, G_N_ELEMENTS(magic));
    return 0;
}
