/* Tests for the model downloader against a real HTTP server: nginx from Debian, started
 * here on 127.0.0.1 with a generated configuration, serving a tree laid out like the Hub
 * (API answers as static JSON, resolve/ paths, LFS files redirected to a "CDN" path) built
 * from the fixture checkpoints. nginx's access log ($http_range, $body_bytes_sent,
 * $http_authorization) is the witness for what was (re)fetched and where a token went.
 * Everything stays on loopback, every wait is bounded, and nginx is stopped at the end. */
#define _GNU_SOURCE
#include "checkpoint.h"
#include "download.h"
#include "error.h"
#include "nginx-util.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#define MAIN_REPO "tencent/HunyuanOCR"

static hyocr_test_hub srv;
static bool own_mounts;   /* a private mount namespace: the disk-full test may mount a tmpfs */

static const hyocr_test_hub_repo repos[] = {
    { MAIN_REPO, true, true },
    { "test/paged", true, true, .no_sizes = true },
    { "test/corrupt", true, false, .corrupt = "model.safetensors" },
    { "test/badjson", true, false, .corrupt = "config.json" },
    { "test/missing", true, false, .missing = "tokenizer.json" },
    { "test/slow", true, false },
};

static char *commit_of(const char *repo) { return hyocr_test_hub_commit(repo); }
static void write_file(const char *path, const char *data, gsize len) { hyocr_test_write_file(path, data, len); }
static bool need_server(void) { return hyocr_test_hub_need(&srv); }

/* ------------------------------------------------------------------ access log */

typedef struct {
    char   *uri;
    int     status;
    char   *range;
    int64_t body;
    char   *auth;
} log_line;

static void log_line_free(gpointer p)
{
    log_line *l = p;
    if (!l) return;
    g_free(l->uri);
    g_free(l->range);
    g_free(l->auth);
    g_free(l);
}

static GPtrArray *read_log(void)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(log_line_free);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(srv.log, &text, NULL, NULL)) return out;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (int i = 0; lines[i]; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], "|", 5);
        if (g_strv_length(f) != 5) continue;
        log_line *l = g_new0(log_line, 1);
        l->uri = g_strdup(f[0]);
        l->status = atoi(f[1]);
        l->range = g_strdup(f[2]);
        l->body = g_ascii_strtoll(f[3], NULL, 10);
        l->auth = g_strdup(f[4]);
        g_ptr_array_add(out, l);
    }
    return out;
}

static int log_mark(void)
{
    g_autoptr(GPtrArray) l = read_log();
    return (int)l->len;
}

/* Lines after `mark` whose URI contains `part`. nginx writes a line when a request ends,
 * which may be a moment after the client saw the last byte: wait (bounded) for `want`. */
static GPtrArray *log_since(int mark, const char *part, guint want)
{
    for (int i = 0;; i++) {
        GPtrArray *all = read_log();
        GPtrArray *out = g_ptr_array_new_with_free_func(log_line_free);
        for (guint k = (guint)mark; k < all->len; k++) {
            log_line *l = all->pdata[k];
            if (strstr(l->uri, part)) {
                all->pdata[k] = NULL;
                g_ptr_array_add(out, l);
            }
        }
        g_ptr_array_free(all, TRUE);
        if (out->len >= want || i >= 400) return out;   /* 20 s: a loaded machine is slow */
        g_ptr_array_unref(out);
        g_usleep(50000);
    }
}

/* ------------------------------------------------------------------ helpers */

typedef struct {
    hyocr_download *dl;
    int64_t last_done, last_total, last_fetched;
    int n_waiting, n_verified, n_resuming;
    bool done_seen;
    char *cancel_file;     /* cancel once this file has cancel_at bytes */
    int64_t cancel_at;
    int64_t cut_at;        /* bytes of cancel_file on disk when cancelled */
    char *fill_file;       /* once this file is verified, fill the disk up to fill_leave bytes free */
    char *fill_path;
    int64_t fill_leave;
    bool filled;
} recorder;

static void fill_disk(recorder *r);

static void record(const hyocr_download_progress *p, void *data)
{
    recorder *r = data;
    g_assert_cmpint(p->done, <=, p->total);
    g_assert_cmpint(p->file_done, <=, p->file_total);
    g_assert_cmpint(p->fetched, >=, r->last_fetched);
    r->last_done = p->done;
    r->last_total = p->total;
    r->last_fetched = p->fetched;
    r->n_waiting += p->phase == HYOCR_DOWNLOAD_PHASE_WAITING;
    r->n_verified += p->phase == HYOCR_DOWNLOAD_PHASE_VERIFIED;
    r->n_resuming += p->phase == HYOCR_DOWNLOAD_PHASE_RESUMING;
    r->done_seen |= p->phase == HYOCR_DOWNLOAD_PHASE_DONE;
    if (p->phase == HYOCR_DOWNLOAD_PHASE_WAITING) g_assert_nonnull(p->message);
    if (r->cancel_file && p->file && !strcmp(p->file, r->cancel_file) && p->file_done >= r->cancel_at &&
        p->phase == HYOCR_DOWNLOAD_PHASE_FETCHING && !r->cut_at) {
        r->cut_at = p->file_done;
        hyocr_download_cancel(r->dl);
    }
    if (r->fill_file && p->file && !strcmp(p->file, r->fill_file) && p->phase == HYOCR_DOWNLOAD_PHASE_VERIFIED &&
        !r->filled)
        fill_disk(r);
}

static hyocr_download *new_dl(const char *repo, hyocr_model_version v, const char *rev, const char *dest,
                              recorder *rec)
{
    hyocr_download_params p;
    hyocr_download_params_init(&p);
    p.endpoint = srv.url;
    p.repo = repo;
    p.version = v;
    p.revision = rev;
    p.dest_dir = dest;
    p.retry_delay = 0.05;
    p.timeout = 10;
    p.progress_interval = 0;   /* every chunk: the cut-off points are then exact */
    p.on_progress = record;
    p.user_data = rec;
    g_autoptr(GError) err = NULL;
    hyocr_download *dl = hyocr_download_new(&p, &err);
    g_assert_no_error(err);
    rec->dl = dl;
    return dl;
}

static void assert_same_file(const char *a, const char *b)
{
    g_autofree char *x = NULL, *y = NULL;
    gsize nx, ny;
    g_assert_true(g_file_get_contents(a, &x, &nx, NULL));
    g_assert_true(g_file_get_contents(b, &y, &ny, NULL));
    g_assert_cmpmem(x, nx, y, ny);
}

/* The 1.5 root's draft files (tests/nginx-util.c serves them in dflash/). */
static const char *const draft_files[] = { "config.json", "model.safetensors" };

/* dest holds exactly src's files (plus the manifest, and for 1.5 the draft in dflash/), byte
 * for byte, and loads. */
static void assert_model(const char *dest, const char *src, bool partial_expected)
{
    g_autoptr(GDir) d = g_dir_open(src, 0, NULL);
    const char *name;
    int n_src = 0;
    while ((name = g_dir_read_name(d))) {
        g_autofree char *a = g_build_filename(src, name, NULL), *b = g_build_filename(dest, name, NULL);
        assert_same_file(a, b);
        n_src++;
    }
    g_autoptr(GDir) e = g_dir_open(dest, 0, NULL);
    int n_dest = 0;
    bool draft = false;
    while ((name = g_dir_read_name(e))) {
        if (!strcmp(name, "dflash")) draft = true;
        else if (strcmp(name, HYOCR_DOWNLOAD_MANIFEST)) n_dest++;
    }
    g_assert_cmpint(n_dest, ==, n_src);
    if (draft) {   /* exactly the draft's two files, as served */
        g_autofree char *dd = g_build_filename(dest, "dflash", NULL);
        g_autoptr(GDir) f = g_dir_open(dd, 0, NULL);
        int n = 0;
        while ((name = g_dir_read_name(f))) {
            g_assert_true(!strcmp(name, draft_files[0]) || !strcmp(name, draft_files[1]));
            n++;
        }
        g_assert_cmpint(n, ==, 2);
        g_autofree char *cfg = g_build_filename(dd, "config.json", NULL), *text = NULL;
        g_assert_true(g_file_get_contents(cfg, &text, NULL, NULL));
        g_assert_cmpstr(text, ==, "{\"draft\": true}\n");
    }
    g_autofree char *partial = g_strconcat(dest, ".partial", NULL);
    g_assert_cmpint(g_file_test(partial, G_FILE_TEST_EXISTS), ==, partial_expected);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_checkpoint) ck = hyocr_checkpoint_open(dest, &err);
    g_assert_no_error(err);
    g_assert_nonnull(ck);
    /* the served draft is a stand-in: found, said unusable, and the model loads all the same */
    g_assert_true(draft == (hyocr_checkpoint_draft_error(ck) != NULL));
}

static void assert_installed(const char *dest, const char *src) { assert_model(dest, src, false); }

static char *read_manifest_commit(const char *dest)
{
    g_autofree char *p = g_build_filename(dest, HYOCR_DOWNLOAD_MANIFEST, NULL);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_assert_true(json_parser_load_from_file(parser, p, NULL));
    return g_strdup(json_object_get_string_member(json_node_get_object(json_parser_get_root(parser)), "commit"));
}

static int64_t total_size(const char *dir)
{
    int64_t sum = 0;
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    while ((name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        GStatBuf st;
        g_assert_cmpint(g_stat(p, &st), ==, 0);
        sum += st.st_size;
    }
    return sum;
}

/* What a 1.5 download fetches: the served model and its stand-in draft. */
static int64_t release_15_bytes(void)
{
    return total_size(srv.nested) + (int64_t)strlen("{\"draft\": true}\n") + (int64_t)strlen("not a real draft model");
}

static int64_t file_size_or_zero(const char *path)
{
    GStatBuf st;
    return g_stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

static int64_t fs_free(const char *dir)
{
    g_autoptr(GFile) f = g_file_new_for_path(dir);
    g_autoptr(GFileInfo) info = g_file_query_filesystem_info(f, G_FILE_ATTRIBUTE_FILESYSTEM_FREE, NULL, NULL);
    g_assert_nonnull(info);
    return (int64_t)g_file_info_get_attribute_uint64(info, G_FILE_ATTRIBUTE_FILESYSTEM_FREE);
}

/* Takes all but fill_leave bytes of the file system's free space. */
static void fill_disk(recorder *r)
{
    r->filled = true;
    g_autofree char *dir = g_path_get_dirname(r->fill_path);
    int64_t take = fs_free(dir) - r->fill_leave;
    FILE *fp = fopen(r->fill_path, "ab");
    g_assert_nonnull(fp);
    static const char zeros[4096];
    for (int64_t i = 0; i + (int64_t)sizeof zeros <= take; i += sizeof zeros)
        g_assert_cmpuint(fwrite(zeros, 1, sizeof zeros, fp), ==, sizeof zeros);
    g_assert_cmpint(fclose(fp), ==, 0);
}

/* ------------------------------------------------------------------ tests */

/* 1.5 from the root: the right files, byte-exact, loadable, verified; LFS files followed to
 * the CDN without the token; a second run fetches nothing. */
static void test_full_download(void)
{
    if (!need_server()) return;
    g_autofree char *root = hyocr_test_tmpdir();
    g_autofree char *dest = g_build_filename(root, "HunyuanOCR-1.5", NULL);
    recorder rec = { 0 };
    int mark = log_mark();
    hyocr_download_params p;
    hyocr_download_params_init(&p);
    p.endpoint = srv.url;
    p.dest_dir = dest;
    p.token = "hf_secret";
    p.on_progress = record;
    p.user_data = &rec;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_download) dl = hyocr_download_new(&p, &err);
    g_assert_no_error(err);
    const hyocr_download_summary *s = hyocr_download_plan(dl, &err);
    g_assert_no_error(err);
    g_autofree char *commit = commit_of(MAIN_REPO);
    g_assert_cmpstr(s->commit, ==, commit);
    g_assert_cmpint(s->n_files, ==, 10);   /* the model's 8 and the draft's 2 */
    g_assert_cmpint(s->total_bytes, ==, release_15_bytes());
    g_assert_cmpint(s->have_bytes, ==, 0);
    g_assert_cmpint(s->free_bytes, >, 0);
    g_assert_false(s->up_to_date);
    for (int i = 0; i < s->n_files; i++) {
        const char *slash = strchr(s->files[i].name, '/');
        g_assert_true(!slash || (g_str_has_prefix(s->files[i].name, "dflash/") &&
                                 (!strcmp(slash + 1, draft_files[0]) || !strcmp(slash + 1, draft_files[1]))));
        g_assert_true(s->files[i].sha256 != NULL || s->files[i].git_oid != NULL);
    }
    g_assert_false(g_file_test(s->partial_dir, G_FILE_TEST_EXISTS));   /* planning writes nothing */
    g_assert_true(hyocr_download_run(dl, &err));
    g_assert_no_error(err);
    assert_installed(dest, srv.nested);
    g_assert_cmpint(rec.last_done, ==, rec.last_total);
    g_assert_cmpint(rec.last_fetched, ==, s->total_bytes);
    g_assert_cmpint(rec.n_verified, ==, 10);
    g_assert_true(rec.done_seen);
    g_autofree char *mcommit = read_manifest_commit(dest);
    g_assert_cmpstr(mcommit, ==, commit);

    /* the token goes to the endpoint, never to the host a redirect points at */
    g_autoptr(GPtrArray) lfs = log_since(mark, "/resolve/", 10);
    g_autoptr(GPtrArray) cdn = log_since(mark, "/cdn/", 2);
    g_assert_cmpuint(lfs->len, ==, 10);
    for (guint i = 0; i < lfs->len; i++) {
        log_line *l = lfs->pdata[i];
        g_assert_cmpstr(l->auth, ==, "Bearer hf_secret");
        g_assert_cmpint(l->status, ==, g_str_has_suffix(l->uri, ".safetensors") ? 302 : 200);
    }
    g_assert_cmpuint(cdn->len, ==, 2);
    for (guint i = 0; i < cdn->len; i++) {
        g_assert_cmpint(((log_line *)cdn->pdata[i])->status, ==, 200);
        g_assert_cmpstr(((log_line *)cdn->pdata[i])->auth, ==, "-");
    }

    g_autoptr(hyocr_model_entry) e = hyocr_model_check(dest, TRUE, &err);
    g_assert_no_error(err);
    g_assert_cmpint(e->state, ==, HYOCR_MODEL_STATE_VERIFIED);
    g_assert_cmpint(e->n_files, ==, 10);   /* the draft's files are verified too */
    g_assert_cmpstr(e->version, ==, "1.5");
    g_assert_cmpstr(e->commit, ==, commit);

    /* again: up to date, nothing fetched */
    recorder again = { 0 };
    int mark2 = log_mark();
    g_autoptr(hyocr_download) dl2 = new_dl(NULL, HYOCR_MODEL_VERSION_1_5, NULL, dest, &again);
    g_assert_true(hyocr_download_run(dl2, &err));
    g_assert_no_error(err);
    g_assert_true(hyocr_download_plan(dl2, NULL)->up_to_date);
    g_assert_cmpint(again.last_fetched, ==, 0);
    g_autoptr(GPtrArray) none = log_since(mark2, "/resolve/", 0);
    g_assert_cmpuint(none->len, ==, 0);
    hyocr_test_rmdir(root);
}

/* 1.0 from v1.0/ through a mirror that ignores blobs=true: the paginated tree API gives the
 * sizes and checksums (git blob ids for the JSON files); names lose the v1.0/ prefix. */
static void test_v10_paged_tree(void)
{
    if (!need_server()) return;
    g_autofree char *root = hyocr_test_tmpdir();
    g_autofree char *dest = g_build_filename(root, "m", NULL);
    recorder rec = { 0 };
    int mark = log_mark();
    g_autoptr(hyocr_download) dl = new_dl("test/paged", HYOCR_MODEL_VERSION_1_0, NULL, dest, &rec);
    g_autoptr(GError) err = NULL;
    const hyocr_download_summary *s = hyocr_download_plan(dl, &err);
    g_assert_no_error(err);
    g_assert_cmpint(s->n_files, ==, 9);
    g_assert_cmpstr(s->subfolder, ==, "v1.0");
    int n_git = 0;
    for (int i = 0; i < s->n_files; i++) {
        g_assert_true(g_str_has_prefix(s->files[i].remote, "v1.0/"));
        n_git += s->files[i].git_oid != NULL;
    }
    g_assert_cmpint(n_git, ==, 7);
    g_autoptr(GPtrArray) pages = log_since(mark, "/pages/test/paged-2.json", 1);
    g_assert_cmpuint(pages->len, ==, 1);
    g_assert_true(hyocr_download_run(dl, &err));
    g_assert_no_error(err);
    assert_installed(dest, srv.flat);
    hyocr_test_rmdir(root);
}

/* A transfer stopped midway (the client aborts after N bytes of the biggest shard), then a
 * new downloader (as after a restart) resumes: the finished files are not asked for again,
 * the shard is asked for from exactly the byte it stopped at, and the bytes received add
 * up to the file size. */
static void test_resume(void)
{
    if (!need_server()) return;
    g_autofree char *root = hyocr_test_tmpdir();
    g_autofree char *dest = g_build_filename(root, "HunyuanOCR-1.0", NULL);
    const char *shard = "model-00001-of-00002.safetensors";
    g_autofree char *shard_src = g_build_filename(srv.flat, shard, NULL);
    GStatBuf st;
    g_assert_cmpint(g_stat(shard_src, &st), ==, 0);
    int64_t shard_size = st.st_size;

    recorder first = { .cancel_file = g_strdup(shard), .cancel_at = 200000 };
    int mark = log_mark();
    g_autoptr(hyocr_download) dl = new_dl(MAIN_REPO, HYOCR_MODEL_VERSION_1_0, NULL, dest, &first);
    g_autoptr(GError) err = NULL;
    g_assert_false(hyocr_download_run(dl, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
    g_assert_cmpint(hyocr_download_get_failure(dl)->kind, ==, HYOCR_DOWNLOAD_FAILURE_CANCELLED);
    g_assert_nonnull(strstr(err->message, "resumes"));
    g_clear_error(&err);
    int64_t cut = first.cut_at;
    g_assert_cmpint(cut, >=, 200000);
    g_assert_cmpint(cut, <, shard_size);
    g_autofree char *partial = g_strconcat(dest, ".partial", NULL);
    g_autofree char *incomplete = g_strdup_printf("%s/%s.incomplete", partial, shard);
    g_assert_cmpint(g_stat(incomplete, &st), ==, 0);
    g_assert_cmpint(st.st_size, ==, cut);
    g_assert_false(g_file_test(dest, G_FILE_TEST_EXISTS));
    g_autoptr(GPtrArray) before = log_since(mark, "/config.json", 1);
    g_assert_cmpuint(before->len, ==, 1);
    /* nginx logs the cut transfer when it notices the client left, which may be after the
     * second run began (CI saw a third shard line so): wait for the first run's two shard
     * lines (the /resolve/ redirect and the cut one) before marking the second run's start. */
    g_autoptr(GPtrArray) cut_lines = log_since(mark, shard, 2);
    g_assert_cmpuint(cut_lines->len, ==, 2);

    /* the state survives in the folder: a fresh downloader sees it */
    recorder second = { 0 };
    int mark2 = log_mark();
    g_autoptr(hyocr_download) dl2 = new_dl(MAIN_REPO, HYOCR_MODEL_VERSION_1_0, NULL, dest, &second);
    const hyocr_download_summary *s = hyocr_download_plan(dl2, &err);
    g_assert_no_error(err);
    g_assert_cmpint(s->have_bytes, ==, s->total_bytes - (shard_size - cut));
    g_assert_true(hyocr_download_run(dl2, &err));
    g_assert_no_error(err);
    assert_installed(dest, srv.flat);
    g_assert_cmpint(second.last_fetched, ==, shard_size - cut);
    g_assert_cmpint(second.n_resuming, ==, 1);

    g_autoptr(GPtrArray) resumed = log_since(mark2, shard, 1);
    g_assert_cmpuint(resumed->len, ==, 2);   /* resolve → 302, then the CDN */
    log_line *cdn = resumed->pdata[1];
    g_autofree char *want = g_strdup_printf("bytes=%" G_GINT64_FORMAT "-", cut);
    g_assert_cmpstr(((log_line *)resumed->pdata[0])->range, ==, want);
    g_assert_cmpstr(cdn->range, ==, want);
    g_assert_cmpint(cdn->status, ==, 206);
    g_assert_cmpint(cdn->body, ==, shard_size - cut);
    g_autoptr(GPtrArray) again = log_since(mark2, "/resolve/", 0);
    for (guint i = 0; i < again->len; i++)   /* nothing but the shard was asked for again */
        g_assert_nonnull(strstr(((log_line *)again->pdata[i])->uri, shard));
    g_free(first.cancel_file);
    hyocr_test_rmdir(root);
}

static void set_state_sha256(const char *state_path, const char *name, const char *sha)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_assert_true(json_parser_load_from_file(parser, state_path, NULL));
    JsonArray *files = json_object_get_array_member(json_node_get_object(json_parser_get_root(parser)), "files");
    for (guint i = 0; i < json_array_get_length(files); i++) {
        JsonObject *f = json_array_get_object_element(files, i);
        if (!strcmp(json_object_get_string_member(f, "name"), name)) json_object_set_string_member(f, "sha256", sha);
    }
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, json_parser_get_root(parser));
    g_assert_true(json_generator_to_file(gen, state_path, NULL));
}

/* What an earlier attempt left is only trusted as far as it can be: bytes that do not
 * belong to the file are caught by the checksum and the file is fetched once more from
 * the start; a partial file of another revision of the file is not resumed at all. */
static void test_resume_untrusted(void)
{
    if (!need_server()) return;
    const char *shard = "model-00001-of-00002.safetensors";
    for (int variant = 0; variant < 2; variant++) {
        g_autofree char *root = hyocr_test_tmpdir();
        g_autofree char *dest = g_build_filename(root, "m", NULL);
        recorder first = { .cancel_file = g_strdup(shard), .cancel_at = 100000 };
        g_autoptr(hyocr_download) dl = new_dl(MAIN_REPO, HYOCR_MODEL_VERSION_1_0, NULL, dest, &first);
        g_autoptr(GError) err = NULL;
        int mark_first = log_mark();
        g_assert_false(hyocr_download_run(dl, &err));
        g_clear_error(&err);
        /* nginx logs the cancelled transfer when it notices the client left, which may be
         * after the second run began: wait for that line (files go one at a time, so it is
         * the first run's last; its /resolve/ redirect is logged too) before marking where
         * the second run's lines start. */
        g_autoptr(GPtrArray) cut = log_since(mark_first, shard, 2);
        g_assert_cmpuint(cut->len, ==, 2);
        g_autofree char *incomplete = g_strdup_printf("%s.partial/%s.incomplete", dest, shard);
        g_autofree char *state = g_strdup_printf("%s.partial/.hyocr-partial.json", dest);
        if (variant == 0) {
            FILE *fp = fopen(incomplete, "r+b");   /* damage the kept bytes */
            g_assert_nonnull(fp);
            fputs("garbage", fp);
            fclose(fp);
        } else {
            set_state_sha256(state, shard, "0000000000000000000000000000000000000000000000000000000000000000");
        }
        int mark = log_mark();
        recorder second = { 0 };
        g_autoptr(hyocr_download) dl2 = new_dl(MAIN_REPO, HYOCR_MODEL_VERSION_1_0, NULL, dest, &second);
        g_assert_true(hyocr_download_run(dl2, &err));
        g_assert_no_error(err);
        assert_installed(dest, srv.flat);
        g_autoptr(GPtrArray) cdn = log_since(mark, "/cdn/" MAIN_REPO "/", variant == 0 ? 2 : 1);
        if (variant == 0) {
            g_assert_cmpuint(cdn->len, ==, 2);
            g_autofree char *want = g_strdup_printf("bytes=%" G_GINT64_FORMAT "-", first.cut_at);
            g_assert_cmpstr(((log_line *)cdn->pdata[0])->range, ==, want);
            g_assert_cmpstr(((log_line *)cdn->pdata[1])->range, ==, "-");
        } else {
            g_assert_cmpuint(cdn->len, ==, 1);
            g_assert_cmpstr(((log_line *)cdn->pdata[0])->range, ==, "-");
        }
        g_free(first.cancel_file);
        hyocr_test_rmdir(root);
    }
}

static void expect_checksum_failure(const char *repo, const char *file, const char *what)
{
    g_autofree char *root = hyocr_test_tmpdir();
    g_autofree char *dest = g_build_filename(root, "m", NULL);
    recorder rec = { 0 };
    g_autoptr(hyocr_download) dl = new_dl(repo, HYOCR_MODEL_VERSION_1_5, NULL, dest, &rec);
    g_autoptr(GError) err = NULL;
    g_assert_false(hyocr_download_run(dl, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, file));
    g_assert_nonnull(strstr(err->message, "checksum mismatch"));
    g_assert_nonnull(strstr(err->message, what));
    const hyocr_download_failure *f = hyocr_download_get_failure(dl);
    g_assert_cmpint(f->kind, ==, HYOCR_DOWNLOAD_FAILURE_CHECKSUM);
    g_assert_cmpstr(f->file, ==, file);
    g_autofree char *partial = g_strconcat(dest, ".partial", NULL);
    g_autofree char *kept = g_build_filename(partial, file, NULL);
    g_autofree char *incomplete = g_strconcat(kept, ".incomplete", NULL);
    g_assert_false(g_file_test(kept, G_FILE_TEST_EXISTS));
    g_assert_false(g_file_test(incomplete, G_FILE_TEST_EXISTS));
    g_assert_false(g_file_test(dest, G_FILE_TEST_EXISTS));
    hyocr_test_rmdir(root);
}

/* The served bytes differ from the listed sha256 (LFS) or git blob id (JSON). */
static void test_corrupt(void)
{
    if (!need_server()) return;
    expect_checksum_failure("test/corrupt", "model.safetensors", "sha256");
    expect_checksum_failure("test/badjson", "config.json", "git blob id");
}

static void expect_failure(const char *repo, hyocr_model_version v, const char *rev,
                           hyocr_download_failure_kind kind, int status, const char *const *words)
{
    g_autofree char *root = hyocr_test_tmpdir();
    g_autofree char *dest = g_build_filename(root, "m", NULL);
    recorder rec = { 0 };
    g_autoptr(hyocr_download) dl = new_dl(repo, v, rev, dest, &rec);
    g_autoptr(GError) err = NULL;
    g_assert_false(hyocr_download_run(dl, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IO);
    g_test_message("%s", err->message);
    for (int i = 0; words[i]; i++) {
        if (!strstr(err->message, words[i])) g_error("\"%s\" not in: %s", words[i], err->message);
    }
    g_assert_null(strstr(err->message, "--"));   /* the front ends name their own options */
    g_assert_cmpint(hyocr_download_get_failure(dl)->kind, ==, kind);
    g_assert_cmpint(hyocr_download_get_failure(dl)->http_status, ==, status);
    g_assert_false(g_file_test(dest, G_FILE_TEST_EXISTS));
    hyocr_test_rmdir(root);
}

static void test_not_found(void)
{
    if (!need_server()) return;
    /* a revision the repository does not have: nothing is written anywhere */
    expect_failure(MAIN_REPO, HYOCR_MODEL_VERSION_1_5, "v9.9", HYOCR_DOWNLOAD_FAILURE_NOT_FOUND, 404,
                   (const char *const[]){ "v9.9", "revision does not exist", "404", NULL });
    /* a listed file the server does not have */
    expect_failure("test/missing", HYOCR_MODEL_VERSION_1_5, NULL, HYOCR_DOWNLOAD_FAILURE_NOT_FOUND, 404,
                   (const char *const[]){ "tokenizer.json", "404", "EntryNotFound", NULL });
    /* --version 1.0 on a repository whose v1.0 folder is empty */
    expect_failure("test/corrupt", HYOCR_MODEL_VERSION_1_0, NULL, HYOCR_DOWNLOAD_FAILURE_NOT_FOUND, 0,
                   (const char *const[]){ "no config.json in v1.0/", "version 1.0", NULL });
}

static void test_access_and_rate_limit(void)
{
    if (!need_server()) return;
    expect_failure("test/gated", HYOCR_MODEL_VERSION_1_5, NULL, HYOCR_DOWNLOAD_FAILURE_ACCESS, 403,
                   (const char *const[]){ "403", "GatedRepo", "licence", "HF_TOKEN", NULL });

    /* 429 with Retry-After: 1 — waited for, retried, then reported with the server's delay */
    int mark = log_mark();
    gint64 t0 = g_get_monotonic_time();
    g_autofree char *root = hyocr_test_tmpdir();
    g_autofree char *dest = g_build_filename(root, "m", NULL);
    recorder rec = { 0 };
    hyocr_download_params p;
    hyocr_download_params_init(&p);
    p.endpoint = srv.url;
    p.repo = "test/busy";
    p.dest_dir = dest;
    p.max_retries = 2;
    p.on_progress = record;
    p.user_data = &rec;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_download) dl = hyocr_download_new(&p, &err);
    g_assert_false(hyocr_download_run(dl, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IO);
    g_assert_nonnull(strstr(err->message, "rate limited"));
    g_assert_nonnull(strstr(err->message, "wait 1 s"));
    const hyocr_download_failure *f = hyocr_download_get_failure(dl);
    g_assert_cmpint(f->kind, ==, HYOCR_DOWNLOAD_FAILURE_RATE_LIMITED);
    g_assert_cmpint(f->http_status, ==, 429);
    g_assert_cmpfloat(f->retry_after, ==, 1.0);
    g_assert_cmpint(rec.n_waiting, ==, 2);
    g_assert_cmpint(g_get_monotonic_time() - t0, >=, 2 * G_USEC_PER_SEC);
    g_autoptr(GPtrArray) tries = log_since(mark, "/api/models/test/busy/", 3);
    g_assert_cmpuint(tries->len, ==, 3);

    /* a server that asks for longer than we may wait: reported at once */
    mark = log_mark();
    p.max_wait = 0.5;
    g_clear_error(&err);
    g_autoptr(hyocr_download) dl2 = hyocr_download_new(&p, &err);
    g_assert_false(hyocr_download_run(dl2, &err));
    g_assert_cmpint(hyocr_download_get_failure(dl2)->kind, ==, HYOCR_DOWNLOAD_FAILURE_RATE_LIMITED);
    g_autoptr(GPtrArray) once = log_since(mark, "/api/models/test/busy/", 1);
    g_assert_cmpuint(once->len, ==, 1);
    hyocr_test_rmdir(root);
}

typedef struct {
    hyocr_download *dl;
    gboolean ok;
    GError *error;
    gint64 ended;
} run_job;

static gpointer run_thread(gpointer data)
{
    run_job *j = data;
    j->ok = hyocr_download_run(j->dl, &j->error);
    j->ended = g_get_monotonic_time();
    return NULL;
}

/* A slow server (nginx limit_rate 40 KB/s): cancelled from another thread — as the app does —
 * the run ends promptly, keeps what it has for later, and installs nothing. */
static void test_cancel_slow(void)
{
    if (!need_server()) return;
    g_autofree char *root = hyocr_test_tmpdir();
    g_autofree char *dest = g_build_filename(root, "m", NULL);
    recorder rec = { 0 };
    g_autoptr(hyocr_download) dl = new_dl("test/slow", HYOCR_MODEL_VERSION_1_5, NULL, dest, &rec);
    run_job job = { .dl = dl };
    GThread *t = g_thread_new("download", run_thread, &job);
    g_autofree char *incomplete = g_build_filename(root, "m.partial", "model.safetensors.incomplete", NULL);
    for (int i = 0; i < 500 && file_size_or_zero(incomplete) < 40000; i++) g_usleep(20000);
    g_assert_cmpint(file_size_or_zero(incomplete), >=, 40000);
    /* meanwhile a second download into the same folder is refused, and disturbs nothing */
    recorder rec2 = { 0 };
    g_autoptr(hyocr_download) other = new_dl("test/slow", HYOCR_MODEL_VERSION_1_5, NULL, dest, &rec2);
    g_autoptr(GError) err = NULL;
    g_assert_false(hyocr_download_run(other, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, "another download"));
    g_assert_cmpint(file_size_or_zero(incomplete), >=, 40000);
    gint64 t_cancel = g_get_monotonic_time();
    hyocr_download_cancel(dl);
    g_thread_join(t);
    g_assert_false(job.ok);
    g_assert_error(job.error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
    g_clear_error(&job.error);
    g_assert_cmpint(job.ended - t_cancel, <, 2 * G_USEC_PER_SEC);
    g_assert_false(g_file_test(dest, G_FILE_TEST_EXISTS));
    int64_t kept = file_size_or_zero(incomplete);
    g_assert_cmpint(kept, >=, 40000);
    g_assert_cmpint(kept, <, 2185840);
    hyocr_test_rmdir(root);
}

static char *slurp(const char *path)
{
    char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return text;
}

/* A 4 MiB tmpfs: a run that cannot fit stops before fetching, a disk that fills mid-transfer
 * stops with the sizes in the message; either way the model already there stays intact and
 * loadable, and once space is freed the download resumes and replaces it. */
static void test_disk_full(void)
{
    if (!need_server()) return;
    g_autofree char *root = hyocr_test_tmpdir();
    g_autofree char *mnt = g_build_filename(root, "small", NULL);
    g_assert_cmpint(g_mkdir(mnt, 0755), ==, 0);
    if (!own_mounts || mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755") != 0) {
        g_autofree char *why = g_strdup_printf("cannot mount a 4 MiB tmpfs on %s (%s): the disk-full test needs "
                                               "root or CAP_SYS_ADMIN — NOT RUN", mnt, own_mounts ? g_strerror(errno) : "no private mount namespace");
        g_test_skip(why);
        hyocr_test_rmdir(root);
        return;
    }
    g_autofree char *dest = g_build_filename(mnt, "HunyuanOCR", NULL);
    g_autofree char *partial = g_strconcat(dest, ".partial", NULL);
    g_autofree char *filler = g_build_filename(mnt, "filler", NULL);
    g_autofree char *manifest = g_build_filename(dest, HYOCR_DOWNLOAD_MANIFEST, NULL);
    g_autoptr(GError) err = NULL;

    /* the model already installed: 1.0 (1.1 MB) */
    recorder r0 = { 0 };
    g_autoptr(hyocr_download) dl0 = new_dl(MAIN_REPO, HYOCR_MODEL_VERSION_1_0, NULL, dest, &r0);
    g_assert_true(hyocr_download_run(dl0, &err));
    g_assert_no_error(err);
    g_autofree char *manifest_before = slurp(manifest);

    /* 1.5 (2.4 MB) with 1 MiB free: refused before any file is asked for */
    recorder r1 = { .fill_path = filler, .fill_leave = 1 << 20 };
    fill_disk(&r1);
    int mark = log_mark();
    g_autoptr(hyocr_download) dl1 = new_dl(MAIN_REPO, HYOCR_MODEL_VERSION_1_5, NULL, dest, &r1);
    g_assert_false(hyocr_download_run(dl1, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IO);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "not enough disk space"));
    const hyocr_download_failure *f1 = hyocr_download_get_failure(dl1);
    g_assert_cmpint(f1->kind, ==, HYOCR_DOWNLOAD_FAILURE_NO_SPACE);
    g_assert_cmpint(f1->need_bytes, ==, release_15_bytes());
    g_assert_cmpint(f1->free_bytes, <, f1->need_bytes);
    g_clear_error(&err);
    g_autoptr(GPtrArray) fetched = log_since(mark, "/resolve/", 0);
    g_assert_cmpuint(fetched->len, ==, 0);
    g_assert_false(g_file_test(partial, G_FILE_TEST_EXISTS));
    g_assert_cmpint(g_unlink(filler), ==, 0);

    /* enough space when it starts, full once model.safetensors is under way */
    recorder r2 = { .fill_file = g_strdup("tokenizer.json"), .fill_path = filler, .fill_leave = 300 * 1024 };
    g_autoptr(hyocr_download) dl2 = new_dl(MAIN_REPO, HYOCR_MODEL_VERSION_1_5, NULL, dest, &r2);
    g_assert_false(hyocr_download_run(dl2, &err));
    g_assert_true(r2.filled);
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IO);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "disk full"));
    g_assert_nonnull(strstr(err->message, "model.safetensors"));
    const hyocr_download_failure *f2 = hyocr_download_get_failure(dl2);
    g_assert_cmpint(f2->kind, ==, HYOCR_DOWNLOAD_FAILURE_NO_SPACE);
    g_assert_cmpstr(f2->file, ==, "model.safetensors");
    g_assert_cmpint(f2->free_bytes, <, f2->need_bytes);
    g_clear_error(&err);
    assert_model(dest, srv.flat, true);
    g_autofree char *manifest_after = slurp(manifest);
    g_assert_cmpstr(manifest_after, ==, manifest_before);
    g_autofree char *incomplete = g_build_filename(partial, "model.safetensors.incomplete", NULL);
    int64_t kept = file_size_or_zero(incomplete);
    g_assert_cmpint(kept, >, 0);

    /* space back: it resumes and the new model replaces the old one */
    g_assert_cmpint(g_unlink(filler), ==, 0);
    recorder r3 = { 0 };
    g_autoptr(hyocr_download) dl3 = new_dl(MAIN_REPO, HYOCR_MODEL_VERSION_1_5, NULL, dest, &r3);
    g_assert_true(hyocr_download_run(dl3, &err));
    g_assert_no_error(err);
    g_assert_cmpint(r3.n_resuming, ==, 1);
    g_assert_cmpint(r3.last_fetched, ==, 2185840 - kept);
    assert_installed(dest, srv.nested);
    g_free(r2.fill_file);
    g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
    hyocr_test_rmdir(root);
}

static void copy_dir(const char *src, const char *dst)
{
    g_assert_cmpint(g_mkdir_with_parents(dst, 0755), ==, 0);
    g_autoptr(GDir) d = g_dir_open(src, 0, NULL);
    const char *name;
    while ((name = g_dir_read_name(d))) {
        g_autofree char *a = g_build_filename(src, name, NULL), *b = g_build_filename(dst, name, NULL);
        g_autofree char *data = NULL;
        gsize len;
        g_assert_true(g_file_get_contents(a, &data, &len, NULL));
        write_file(b, data, len);
    }
}

/* Flips one byte without changing the size or the time: only a rehash can tell. */
static void corrupt_silently(const char *path)
{
    GStatBuf st;
    g_assert_cmpint(g_stat(path, &st), ==, 0);
    FILE *fp = fopen(path, "r+b");
    g_assert_nonnull(fp);
    g_assert_cmpint(fseek(fp, 1000, SEEK_SET), ==, 0);
    int c = fgetc(fp);
    g_assert_cmpint(fseek(fp, 1000, SEEK_SET), ==, 0);
    fputc(c ^ 1, fp);
    g_assert_cmpint(fclose(fp), ==, 0);
    struct utimbuf times = { .actime = st.st_atime, .modtime = st.st_mtime };
    g_assert_cmpint(g_utime(path, &times), ==, 0);
}

static void test_models(void)
{
    if (!need_server()) return;
    g_autofree char *root = hyocr_test_tmpdir();
    g_autofree char *m15 = g_build_filename(root, "HunyuanOCR-1.5", NULL);
    g_autofree char *m10 = g_build_filename(root, "HunyuanOCR-1.0", NULL);
    g_autofree char *manual = g_build_filename(root, "manual", NULL);
    g_autofree char *photos = g_build_filename(root, "photos", NULL);
    g_autoptr(GError) err = NULL;
    recorder r1 = { 0 }, r2 = { .cancel_file = g_strdup("model-00001-of-00002.safetensors"), .cancel_at = 1 };
    g_autoptr(hyocr_download) d1 = new_dl(MAIN_REPO, HYOCR_MODEL_VERSION_1_5, NULL, m15, &r1);
    g_assert_true(hyocr_download_run(d1, &err));
    g_autoptr(hyocr_download) d2 = new_dl(MAIN_REPO, HYOCR_MODEL_VERSION_1_0, NULL, m10, &r2);
    g_assert_false(hyocr_download_run(d2, &err));
    g_clear_error(&err);
    copy_dir(srv.flat, manual);
    g_assert_cmpint(g_mkdir(photos, 0755), ==, 0);

    g_autoptr(GPtrArray) list = hyocr_models_scan(root, FALSE, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(list->len, ==, 3);
    hyocr_model_entry *e10 = list->pdata[0], *e15 = list->pdata[1], *em = list->pdata[2];
    g_assert_cmpstr(e10->name, ==, "HunyuanOCR-1.0");
    g_assert_cmpint(e10->state, ==, HYOCR_MODEL_STATE_INCOMPLETE);
    g_assert_cmpstr(e10->version, ==, "1.0");
    g_assert_cmpint(e10->partial_bytes, >, 0);
    g_assert_nonnull(strstr(e10->problem, "resume"));
    g_assert_cmpstr(e15->name, ==, "HunyuanOCR-1.5");
    g_assert_cmpint(e15->state, ==, HYOCR_MODEL_STATE_VERIFIED);
    g_assert_cmpint(e15->size, ==, release_15_bytes());
    g_assert_cmpstr(em->name, ==, "manual");
    g_assert_cmpint(em->state, ==, HYOCR_MODEL_STATE_UNMANAGED);
    /* where a version goes, and the free space of a folder not made yet (its parent's) */
    g_autofree char *dest10 = hyocr_models_dest(root, HYOCR_MODEL_VERSION_1_0);
    g_assert_cmpstr(dest10, ==, m10);
    g_autofree char *unborn = g_build_filename(root, "not", "yet", NULL);
    g_assert_cmpint(hyocr_models_free_space(unborn), >, 0);   /* -1 when it found no file system */

    /* a silent bit flip: only --verify sees it, and names the file */
    g_autofree char *weights = g_build_filename(m15, "model.safetensors", NULL);
    corrupt_silently(weights);
    g_autoptr(hyocr_model_entry) quick = hyocr_model_check(m15, FALSE, &err);
    g_assert_cmpint(quick->state, ==, HYOCR_MODEL_STATE_VERIFIED);
    g_autoptr(hyocr_model_entry) full = hyocr_model_check(m15, TRUE, &err);
    g_assert_cmpint(full->state, ==, HYOCR_MODEL_STATE_CORRUPT);
    g_assert_nonnull(strstr(full->problem, "model.safetensors"));
    /* a visible change: size differs → flagged without rehashing */
    g_autofree char *cfg = g_build_filename(m15, "config.json", NULL);
    FILE *fp = fopen(cfg, "ab");
    fputc(' ', fp);
    fclose(fp);
    g_autoptr(hyocr_model_entry) changed = hyocr_model_check(m15, FALSE, &err);
    g_assert_cmpint(changed->state, ==, HYOCR_MODEL_STATE_CHANGED);
    g_assert_nonnull(strstr(changed->problem, "config.json"));
    g_free(r2.cancel_file);
    hyocr_test_rmdir(root);
}

/* Refuses to replace a folder it did not create, and rejects nonsense parameters. */
static void test_bad_params(void)
{
    g_autofree char *root = hyocr_test_tmpdir();
    g_autofree char *note = g_build_filename(root, "notes.txt", NULL);
    write_file(note, "mine", 4);
    hyocr_download_params p;
    hyocr_download_params_init(&p);
    p.endpoint = srv.url ? srv.url : "http://127.0.0.1:9";
    p.dest_dir = root;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_download) dl = hyocr_download_new(&p, &err);
    g_assert_no_error(err);
    g_assert_null(hyocr_download_plan(dl, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, "did not download"));
    g_assert_true(g_file_test(note, G_FILE_TEST_EXISTS));
    g_clear_error(&err);
    p.dest_dir = NULL;
    p.endpoint = "ftp://example.org";
    g_assert_null(hyocr_download_new(&p, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);
    p.endpoint = NULL;
    p.repo = "no-slash";
    g_assert_null(hyocr_download_new(&p, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);
    p.repo = NULL;
    p.subfolder = "../etc";
    g_assert_null(hyocr_download_new(&p, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);
    /* a refused connection is retried, then reported with the host and a hint */
    p.subfolder = NULL;
    p.endpoint = "http://127.0.0.1:9";
    p.max_retries = 1;
    p.retry_delay = 0.01;
    g_autofree char *dest = g_build_filename(root, "m", NULL);
    p.dest_dir = dest;
    g_autoptr(hyocr_download) dl2 = hyocr_download_new(&p, &err);
    g_assert_false(hyocr_download_run(dl2, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IO);
    g_assert_nonnull(strstr(err->message, "could not reach 127.0.0.1"));
    g_assert_null(strstr(err->message, "--"));   /* the mirror option is the front end's to name */
    g_assert_cmpint(hyocr_download_get_failure(dl2)->kind, ==, HYOCR_DOWNLOAD_FAILURE_NETWORK);
    hyocr_test_rmdir(root);
}

#ifdef HYOCR_CLI
static int run_cli(char **env, const char *const *args, char **out, char **errout)
{
    GPtrArray *argv = g_ptr_array_new();
    g_ptr_array_add(argv, (gpointer)HYOCR_CLI);
    for (int i = 0; args[i]; i++) g_ptr_array_add(argv, (gpointer)args[i]);
    g_ptr_array_add(argv, NULL);
    int status = -1;
    g_autoptr(GError) err = NULL;
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, env, G_SPAWN_DEFAULT, NULL, NULL, out, errout, &status,
                               &err));
    g_assert_no_error(err);
    g_ptr_array_free(argv, TRUE);
    g_test_message("hyocr %s → %d\n%s%s", args[0], status, *out, *errout);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
#endif

/* `hyocr download` and `hyocr models` as a user runs them, output to a pipe (plain lines). */
static void test_cli(void)
{
#ifndef HYOCR_CLI
    g_test_skip("built without the hyocr command");
#else
    if (!need_server()) return;
    g_autofree char *root = hyocr_test_tmpdir();
    g_autofree char *data = g_build_filename(root, "data", NULL);
    char **env = g_get_environ();
    env = g_environ_setenv(env, "XDG_DATA_HOME", data, TRUE);
    env = g_environ_setenv(env, "HF_ENDPOINT", srv.url, TRUE);   /* the mirror variable is honoured */
    env = g_environ_unsetenv(env, "HF_TOKEN");
    g_autofree char *out = NULL, *errout = NULL;
    g_assert_cmpint(run_cli(env, (const char *const[]){ "download", "--version", "1.0", NULL }, &out, &errout), ==, 0);
    g_autofree char *dest = g_build_filename(data, "hyocr", "models", "HunyuanOCR-1.0", NULL);
    assert_installed(dest, srv.flat);
    g_assert_nonnull(strstr(out, "complete and verified"));
    g_assert_nonnull(strstr(errout, "United Kingdom"));
    g_assert_nonnull(strstr(errout, "verified config.json"));
    g_assert_nonnull(strstr(errout, "100%"));
    g_assert_null(strchr(errout, '\r'));   /* no progress bar when not on a terminal */
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&errout, g_free);

    g_assert_cmpint(run_cli(env, (const char *const[]){ "models", NULL }, &out, &errout), ==, 0);
    g_assert_nonnull(strstr(out, "HunyuanOCR-1.0"));
    g_assert_nonnull(strstr(out, "complete, verified"));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&errout, g_free);

    g_autofree char *shard = g_build_filename(dest, "model-00002-of-00002.safetensors", NULL);
    corrupt_silently(shard);
    g_assert_cmpint(run_cli(env, (const char *const[]){ "models", "--verify", NULL }, &out, &errout), ==, 1);
    g_assert_nonnull(strstr(out, "CORRUPT"));
    g_assert_nonnull(strstr(out, "model-00002-of-00002.safetensors"));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&errout, g_free);
    /* a file changed after verification: the listing says so, and how to know more */
    g_autofree char *cfg = g_build_filename(dest, "config.json", NULL);
    FILE *fp = fopen(cfg, "ab");
    fputc(' ', fp);
    fclose(fp);
    g_assert_cmpint(run_cli(env, (const char *const[]){ "models", NULL }, &out, &errout), ==, 0);
    g_assert_nonnull(strstr(out, "changed since verification"));
    g_assert_nonnull(strstr(out, "hyocr models --verify"));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&errout, g_free);

    g_autofree char *other = g_build_filename(root, "other", NULL);
    g_assert_cmpint(run_cli(env, (const char *const[]){ "download", "--revision", "nope", other, NULL }, &out,
                            &errout), ==, 1);
    g_assert_nonnull(strstr(errout, "revision does not exist"));
    /* the command words what to do with its own options */
    g_assert_nonnull(strstr(errout, "check --revision (“nope”) and --version (1.5)"));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&errout, g_free);
    g_assert_cmpint(run_cli(env, (const char *const[]){ "download", "--version", "2.0", NULL }, &out, &errout), ==, 2);
    g_strfreev(env);
    hyocr_test_rmdir(root);
#endif
}

int main(int argc, char **argv)
{
    /* A mount namespace of our own, made while still single-threaded: the disk-full test's
     * tmpfs then disappears with this process even when an assertion aborts it. */
    own_mounts = unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
    g_test_init(&argc, &argv, NULL);
    g_unsetenv("HF_TOKEN");
    g_unsetenv("HF_ENDPOINT");
    hyocr_test_hub_start(&srv, repos, G_N_ELEMENTS(repos));
    g_test_add_func("/download/full", test_full_download);
    g_test_add_func("/download/v1.0-paged-tree", test_v10_paged_tree);
    g_test_add_func("/download/resume", test_resume);
    g_test_add_func("/download/resume-untrusted", test_resume_untrusted);
    g_test_add_func("/download/corrupt", test_corrupt);
    g_test_add_func("/download/not-found", test_not_found);
    g_test_add_func("/download/access-and-rate-limit", test_access_and_rate_limit);
    g_test_add_func("/download/cancel-slow", test_cancel_slow);
    g_test_add_func("/download/disk-full", test_disk_full);
    g_test_add_func("/download/models", test_models);
    g_test_add_func("/download/bad-params", test_bad_params);
    g_test_add_func("/download/cli", test_cli);
    int rc = g_test_run();
    hyocr_test_hub_clear(&srv);
    return rc;
}
