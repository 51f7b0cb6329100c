/* Fuzzes hyocr serve's request parser (src/server/request.c): any body a client
 * sends to /v1/chat/completions. It is accepted with exactly one image and a
 * conversation the chat template renders (holding that one image) and stop
 * sequences the engine takes, or refused with a 400 that names what is wrong;
 * never a crash. file:// images are read under the fixtures' image folder. */
#include "fuzz.h"
#include "config.h"
#include "prompt.h"
#include "server.h"
#include "stop.h"
#include "tokenizer.h"

#include <string.h>

#ifndef HYOCR_TEST_DATA
#define HYOCR_TEST_DATA "tests/data"
#endif

static hyocr_tokenizer *tok;
static hyocr_config *cfg;
static char *images;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init();
    const char *data_dir = g_getenv("HYOCR_TEST_DATA");
    g_autofree char *model = g_build_filename(data_dir ? data_dir : HYOCR_TEST_DATA, "ckpt-nested", NULL);
    g_autofree char *tok_path = g_build_filename(model, "tokenizer.json", NULL);
    g_autoptr(GError) err = NULL;
    tok = hyocr_tokenizer_load(tok_path, &err);
    cfg = tok ? hyocr_config_load(model, &err) : NULL;
    if (!cfg) g_error("%s", err->message);
    images = g_build_filename(data_dir ? data_dir : HYOCR_TEST_DATA, "images", NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hyocr_request_limits lim = { .max_body = 1 << 20, .allowed_media_dir = images };
    hyocr_chat_request r;
    hyocr_api_error e = { 0 };
    bool ok = hyocr_chat_request_parse(&r, (const char *)data, size, &lim, &e);
    if (!ok) {
        fuzz_require(e.status == 400 && e.message && *e.message, "a refusal without a 400 and a message");
        fuzz_require(g_utf8_validate(e.message, -1, NULL), "a refusal message that is not UTF-8");
    } else {
        fuzz_require(e.status == 0 && r.n_images == 1 && r.image && r.n_msgs > 0, "accepted without its one image");
        g_autoptr(GError) err = NULL;
        int n_images = -1;
        g_autofree char *rendered = hyocr_chat_render(tok, cfg, r.msgs, r.n_msgs, &n_images, &err);
        fuzz_require(rendered && n_images == 1, "an accepted conversation that does not render with one image: %s",
                     err ? err->message : "");
        g_clear_error(&err);
        fuzz_require(hyocr_stop_strings_check(r.stop, &err), "accepted stop strings the engine refuses: %s",
                     err ? err->message : "");
        fuzz_require(r.n_stop_token_ids >= 0 && r.n_stop_token_ids <= HYOCR_STOP_MAX_TOKENS,
                     "accepted %d stop token ids", r.n_stop_token_ids);
        for (int i = 0; i < r.n_stop_token_ids; i++)
            fuzz_require(r.stop_token_ids[i] >= 0, "accepted a negative stop token id");
        fuzz_require(r.top_logprobs >= 0 && r.top_logprobs <= HYOCR_TOP_LOGPROBS_MAX && (r.logprobs || !r.top_logprobs),
                     "accepted top_logprobs %d (logprobs %d)", r.top_logprobs, r.logprobs);
    }
    hyocr_chat_request_clear(&r);
    hyocr_api_error_clear(&e);
    return 0;
}
