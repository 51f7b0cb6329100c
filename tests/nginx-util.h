/* A Hugging Face Hub look-alike for the download tests: nginx from Debian, started on
 * 127.0.0.1 with a generated configuration, serving a tree built from the fixture
 * checkpoints (API answers as static JSON, resolve/ paths, LFS files redirected to a
 * "CDN" path on another host name). Shared by tests/test-download.c and the app's
 * tests/app/test-app-download.c. Everything stays on loopback, every wait is bounded,
 * and nginx dies with the test process. */
#pragma once
#include <glib.h>
#include <stdbool.h>

G_BEGIN_DECLS

typedef struct {
    const char *repo;
    bool root;            /* 1.5 layout at the root (ckpt-nested) */
    bool v10;             /* 1.0 layout in v1.0/ (ckpt-flat) */
    bool no_sizes;        /* revision answer without sizes: forces the paginated tree API */
    const char *corrupt;  /* path whose served bytes differ from the listed checksum */
    const char *missing;  /* path listed but not served */
} hyocr_test_hub_repo;

/* Besides the listed repositories the server knows test/busy (always 429 with
 * Retry-After: 1) and test/gated (403 GatedRepo); files of a repository named test/slow
 * and test/paged's v1.0 listing get their special treatment when those are listed. */
typedef struct {
    char *tmp;            /* server root: conf, logs, hub/ */
    char *hub;
    char *url;            /* http://127.0.0.1:PORT */
    char *log;            /* access log: $request_uri|$status|$http_range|$body_bytes_sent|$http_authorization */
    GPid  pid;
    char *skip;           /* why the server is not running; NULL when it is */
    char *flat, *nested;  /* the fixture checkpoints served as 1.0 and 1.5 */
    int   cdn_rate;       /* bytes/s for every LFS ("CDN") file; 0: unlimited */
} hyocr_test_hub;

/* Builds the tree and starts nginx; set h->cdn_rate before, if wanted. On any problem
 * (nginx or fixtures missing) h->skip says why and nothing runs. */
void  hyocr_test_hub_start(hyocr_test_hub *h, const hyocr_test_hub_repo *repos, size_t n_repos);
/* Stops nginx, removes the tree and frees the fields. */
void  hyocr_test_hub_clear(hyocr_test_hub *h);
/* Skips the current test loudly when the server is not running. */
bool  hyocr_test_hub_need(const hyocr_test_hub *h);
/* The commit id the fake Hub gives a repository. */
char *hyocr_test_hub_commit(const char *repo);
/* Writes a file, creating its folders; fails the test on error. */
void  hyocr_test_write_file(const char *path, const char *data, gsize len);

G_END_DECLS
