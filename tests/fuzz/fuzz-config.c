/* Fuzzes the checkpoint configuration reader (hyocr_config_load): the input holds
 * config.json, generation_config.json, preprocessor_config.json,
 * processor_config.json, tokenizer_config.json and chat_template.jinja in that
 * order, separated by NUL bytes; a file whose part is missing is not written. */
#include "fuzz.h"
#include "config.h"
#include "error.h"

static const char *const files[] = {
    "config.json", "generation_config.json", "preprocessor_config.json", "processor_config.json",
    "tokenizer_config.json", "chat_template.jinja",
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_part parts[G_N_ELEMENTS(files)];
    int n;
    fuzz_split(data, size, parts, G_N_ELEMENTS(files), &n);
    for (int i = 0; i < (int)G_N_ELEMENTS(files); i++) {
        if (i < n) g_free(fuzz_write(files[i], parts[i].data, parts[i].len));
        else fuzz_remove(files[i]);
    }
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_config) cfg = hyocr_config_load(fuzz_dir(), &err);
    fuzz_require(!cfg == !!err, "a config and an error, or neither");
    if (err) {
        fuzz_note(err);
        fuzz_require(err->domain == HYOCR_ERROR, "foreign error: %s", err->message);
        return 0;
    }
    /* what the engine derives from a config it accepted */
    fuzz_require(hyocr_config_vision_head_dim(cfg) > 0, "vision head_dim %d", hyocr_config_vision_head_dim(cfg));
    fuzz_require(hyocr_config_pos_edge(cfg) > 0, "position edge %d", hyocr_config_pos_edge(cfg));
    for (int i = 0; i < cfg->generation.n_eos; i++)
        fuzz_require(hyocr_config_is_eos(cfg, cfg->generation.eos_ids[i]), "eos id %d", cfg->generation.eos_ids[i]);
    return 0;
}
