/* The fake Hub of the download tests: see nginx-util.h. */
#define _GNU_SOURCE
#include "nginx-util.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <json-glib/json-glib.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

char *hyocr_test_hub_commit(const char *repo)
{
    g_autofree char *seed = g_strconcat("commit:", repo, NULL);
    return g_compute_checksum_for_string(G_CHECKSUM_SHA1, seed, -1);
}

static char *git_blob_id(const char *data, gsize len)
{
    g_autoptr(GChecksum) c = g_checksum_new(G_CHECKSUM_SHA1);
    g_autofree char *head = g_strdup_printf("blob %zu", len);
    g_checksum_update(c, (const guchar *)head, (gssize)strlen(head) + 1);
    g_checksum_update(c, (const guchar *)data, (gssize)len);
    return g_strdup(g_checksum_get_string(c));
}

void hyocr_test_write_file(const char *path, const char *data, gsize len)
{
    g_autofree char *dir = g_path_get_dirname(path);
    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    g_autoptr(GError) err = NULL;
    g_assert_true(g_file_set_contents(path, data, (gssize)len, &err));
}

typedef struct {
    char  *path;     /* in the repository */
    GBytes *data;
} repo_file;

static void repo_file_free(gpointer p)
{
    repo_file *f = p;
    g_free(f->path);
    g_bytes_unref(f->data);
    g_free(f);
}

static void add_dir_files(GPtrArray *out, const char *src, const char *prefix)
{
    g_autoptr(GDir) d = g_dir_open(src, 0, NULL);
    g_assert_nonnull(d);
    const char *name;
    while ((name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(src, name, NULL);
        char *data;
        gsize len;
        g_assert_true(g_file_get_contents(p, &data, &len, NULL));
        repo_file *f = g_new0(repo_file, 1);
        f->path = g_strconcat(prefix, name, NULL);
        f->data = g_bytes_new_take(data, len);
        g_ptr_array_add(out, f);
    }
}

static void add_literal(GPtrArray *out, const char *path, const char *text)
{
    repo_file *f = g_new0(repo_file, 1);
    f->path = g_strdup(path);
    f->data = g_bytes_new(text, strlen(text));
    g_ptr_array_add(out, f);
}

static bool is_lfs(const char *path) { return g_str_has_suffix(path, ".safetensors"); }

/* One tree/revision entry. tree: the tree API's spelling (oid), else the siblings' (blobId, sha256). */
static void add_entry(JsonBuilder *b, const repo_file *f, bool tree, bool sizes)
{
    gsize len;
    const char *data = g_bytes_get_data(f->data, &len);
    g_autofree char *sha = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)data, len);
    g_autofree char *pointer = g_strdup_printf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %zu\n",
                                               sha, len);
    g_autofree char *oid = is_lfs(f->path) ? git_blob_id(pointer, strlen(pointer)) : git_blob_id(data, len);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, tree ? "path" : "rfilename");
    json_builder_add_string_value(b, f->path);
    if (tree) {
        json_builder_set_member_name(b, "type");
        json_builder_add_string_value(b, "file");
    }
    if (sizes) {
        json_builder_set_member_name(b, "size");
        json_builder_add_int_value(b, (gint64)len);
        json_builder_set_member_name(b, tree ? "oid" : "blobId");
        json_builder_add_string_value(b, oid);
        if (is_lfs(f->path)) {
            json_builder_set_member_name(b, "lfs");
            json_builder_begin_object(b);
            json_builder_set_member_name(b, tree ? "oid" : "sha256");
            json_builder_add_string_value(b, sha);
            json_builder_set_member_name(b, "size");
            json_builder_add_int_value(b, (gint64)len);
            json_builder_set_member_name(b, "pointerSize");
            json_builder_add_int_value(b, (gint64)strlen(pointer));
            json_builder_end_object(b);
        }
    }
    json_builder_end_object(b);
}

static void write_json(const char *path, JsonBuilder *b)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    gsize len;
    g_autofree char *text = json_generator_to_data(gen, &len);
    hyocr_test_write_file(path, text, len);
}

static void write_revision(const hyocr_test_hub *h, const hyocr_test_hub_repo *r, GPtrArray *files, const char *commit)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "id");
    json_builder_add_string_value(b, r->repo);
    json_builder_set_member_name(b, "sha");
    json_builder_add_string_value(b, commit);
    json_builder_set_member_name(b, "siblings");
    json_builder_begin_array(b);
    for (guint i = 0; i < files->len; i++) add_entry(b, files->pdata[i], false, !r->no_sizes);
    json_builder_end_array(b);
    json_builder_end_object(b);
    const char *revs[] = { "main", commit };
    for (int i = 0; i < 2; i++) {
        g_autofree char *p = g_build_filename(h->hub, "api/models", r->repo, "revision", revs[i], NULL);
        write_json(p, b);
    }
}

/* tree/<commit>/index.json (root, recursive) and tree/<commit>/v1.0; a repo without sizes in
 * its revision answer gets its v1.0 listing in two pages (Link header set in nginx.conf). */
static void write_trees(const hyocr_test_hub *h, const hyocr_test_hub_repo *r, GPtrArray *files, const char *commit)
{
    const char *folders[] = { "", "v1.0" };
    for (int k = 0; k < 2; k++) {
        GPtrArray *sel = g_ptr_array_new();
        for (guint i = 0; i < files->len; i++) {
            const repo_file *f = files->pdata[i];
            if (!*folders[k] || g_str_has_prefix(f->path, "v1.0/")) g_ptr_array_add(sel, (gpointer)f);
        }
        bool paged = r->no_sizes && *folders[k];
        guint split = paged ? sel->len / 2 : sel->len;
        for (int page = 0; page < (paged ? 2 : 1); page++) {
            g_autoptr(JsonBuilder) b = json_builder_new();
            json_builder_begin_array(b);
            for (guint i = page ? split : 0; i < (page ? sel->len : split); i++) add_entry(b, sel->pdata[i], true, true);
            if (!*folders[k]) {   /* folders appear in recursive listings; the client must skip them */
                json_builder_begin_object(b);
                json_builder_set_member_name(b, "type");
                json_builder_add_string_value(b, "directory");
                json_builder_set_member_name(b, "path");
                json_builder_add_string_value(b, "dflash");
                json_builder_end_object(b);
            }
            json_builder_end_array(b);
            g_autofree char *p = page ? g_strdup_printf("%s/pages/%s-2.json", h->hub, r->repo)
                                      : g_build_filename(h->hub, "api/models", r->repo, "tree", commit,
                                                         *folders[k] ? folders[k] : "index.json", NULL);
            write_json(p, b);
        }
        g_ptr_array_free(sel, TRUE);
    }
}

static void write_served(const hyocr_test_hub *h, const hyocr_test_hub_repo *r, GPtrArray *files, const char *commit)
{
    for (guint i = 0; i < files->len; i++) {
        const repo_file *f = files->pdata[i];
        if (r->missing && !strcmp(f->path, r->missing)) continue;
        gsize len;
        const void *bytes = g_bytes_get_data(f->data, &len);
        g_autofree char *data = g_memdup2(bytes, len);
        if (r->corrupt && !strcmp(f->path, r->corrupt)) data[len / 2] ^= 0x5a;
        g_autofree char *p = is_lfs(f->path) ? g_build_filename(h->hub, "cdn", r->repo, commit, f->path, NULL)
                                             : g_build_filename(h->hub, r->repo, "resolve", commit, f->path, NULL);
        hyocr_test_write_file(p, data, len);
    }
}

static void build_repo(const hyocr_test_hub *h, const hyocr_test_hub_repo *r)
{
    g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(repo_file_free);
    if (r->root) add_dir_files(files, h->nested, "");
    if (r->v10) add_dir_files(files, h->flat, "v1.0/");
    /* what a real repository also holds and the downloader must leave alone */
    add_literal(files, "README.md", "---\nlicense: other\n---\n# HunyuanOCR\n");
    add_literal(files, ".gitattributes", "*.safetensors filter=lfs diff=lfs merge=lfs -text\n");
    add_literal(files, "video_preprocessor_config.json", "{}\n");
    add_literal(files, "dflash/tokenizer.json", "{}\n");
    /* the 1.5 draft, which a 1.5 download fetches into dflash/ (a stand-in: tests/test-dflash.c
     * loads the real format) */
    add_literal(files, "dflash/config.json", "{\"draft\": true}\n");
    add_literal(files, "dflash/model.safetensors", "not a real draft model");
    g_autofree char *commit = hyocr_test_hub_commit(r->repo);
    write_revision(h, r, files, commit);
    write_trees(h, r, files, commit);
    write_served(h, r, files, commit);
}

/* ------------------------------------------------------------------ nginx */

static char *nginx_path(void)
{
    char *p = g_find_program_in_path("nginx");
    if (!p && g_file_test("/usr/sbin/nginx", G_FILE_TEST_IS_EXECUTABLE)) p = g_strdup("/usr/sbin/nginx");
    return p;
}

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t n = sizeof a;
    g_assert_cmpint(bind(s, (struct sockaddr *)&a, sizeof a), ==, 0);
    g_assert_cmpint(getsockname(s, (struct sockaddr *)&a, &n), ==, 0);
    close(s);
    return ntohs(a.sin_port);
}

static char *nginx_conf(const hyocr_test_hub *h, int port)
{
    GString *c = g_string_new(NULL);
    /* one process, so that the death signal set at spawn takes the whole server down with us */
    g_string_append_printf(c, "daemon off;\nmaster_process off;\npid %s/nginx.pid;\nerror_log %s/error.log info;\n"
                           "events { worker_connections 64; }\nhttp {\n", h->tmp, h->tmp);
    const char *temps[] = { "client_body", "proxy", "fastcgi", "uwsgi", "scgi" };
    for (size_t i = 0; i < G_N_ELEMENTS(temps); i++)
        g_string_append_printf(c, "  %s_temp_path %s/temp-%s;\n", temps[i], h->tmp, temps[i]);
    g_string_append_printf(c,
        "  log_format hub '$request_uri|$status|$http_range|$body_bytes_sent|$http_authorization';\n"
        "  access_log %s hub;\n"
        "  default_type application/octet-stream;\n"
        "  keepalive_timeout 5s;\n"
        "  server {\n"
        "    listen 127.0.0.1:%d;\n"
        "    root %s;\n"
        "    location ^~ /api/models/test/busy/ { add_header Retry-After 1 always; return 429; }\n"
        "    location ^~ /api/models/test/gated/ { add_header X-Error-Code GatedRepo always; return 403; }\n"
        "    location ~ ^/api/models/[^/]+/[^/]+/revision/ {\n"
        "      default_type application/json; error_page 404 = @revision_not_found; }\n"
        "    location @revision_not_found {\n"
        "      add_header X-Error-Code RevisionNotFound always; default_type application/json;\n"
        "      return 404 '{\"error\":\"Invalid rev id\"}'; }\n"
        "    location /api/ { default_type application/json; try_files $uri $uri/index.json =404; }\n"
        /* LFS files live on "another host", as on the Hub: localhost instead of 127.0.0.1 */
        "    location ~ ^/(?<repo>[^/]+/[^/]+)/resolve/(?<rest>.+\\.safetensors)$ {\n"
        "      return 302 http://localhost:%d/cdn/$repo/$rest; }\n"
        "    location ~ /resolve/ { error_page 404 = @entry_not_found; }\n"
        "    location @entry_not_found { add_header X-Error-Code EntryNotFound always; return 404; }\n"
        "    location ^~ /cdn/test/slow/ { limit_rate 40k; }\n",
        h->log, port, h->hub, port);
    if (h->cdn_rate > 0) g_string_append_printf(c, "    location ^~ /cdn/ { limit_rate %d; }\n", h->cdn_rate);
    g_autofree char *paged = hyocr_test_hub_commit("test/paged");
    g_string_append_printf(c,
        "    location = /api/models/test/paged/tree/%s/v1.0 {\n"
        "      default_type application/json; add_header Link '<%s/pages/test/paged-2.json>; rel=\"next\"'; }\n"
        "  }\n}\n", paged, h->url);
    return g_string_free(c, FALSE);
}

static bool port_open(int port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    bool ok = connect(s, (struct sockaddr *)&a, sizeof a) == 0;
    close(s);
    return ok;
}

/* nginx must not outlive a test that crashes or is killed by a timeout. */
static void die_with_parent(gpointer data)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static void server_start(hyocr_test_hub *h)
{
    g_autofree char *nginx = nginx_path();
    if (!nginx) {
        h->skip = g_strdup("nginx is not installed (apt-get install nginx-light): download tests NOT RUN");
        return;
    }
    for (int tries = 0; tries < 3 && !h->pid; tries++) {
        int port = free_port();
        g_free(h->url);
        h->url = g_strdup_printf("http://127.0.0.1:%d", port);
        g_autofree char *conf = nginx_conf(h, port);
        g_autofree char *conf_path = g_build_filename(h->tmp, "nginx.conf", NULL);
        hyocr_test_write_file(conf_path, conf, strlen(conf));
        g_autofree char *err_path = g_build_filename(h->tmp, "error.log", NULL);
        char *argv[] = { nginx, "-p", h->tmp, "-e", err_path, "-c", conf_path, NULL };
        GPid pid;
        g_autoptr(GError) err = NULL;
        if (!g_spawn_async(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, die_with_parent, NULL, &pid, &err)) {
            h->skip = g_strdup_printf("cannot start nginx: %s", err->message);
            return;
        }
        for (int i = 0; i < 100 && !port_open(port); i++) {
            if (waitpid(pid, NULL, WNOHANG) == pid) break;
            g_usleep(50000);
        }
        if (port_open(port)) h->pid = pid;
        else {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
    }
    if (!h->pid) {
        g_autofree char *log_path = g_build_filename(h->tmp, "error.log", NULL);
        g_autofree char *log = NULL;
        g_file_get_contents(log_path, &log, NULL, NULL);
        h->skip = g_strdup_printf("nginx did not start: %s", log ? log : "(no error log)");
    }
}

static void server_stop(hyocr_test_hub *h)
{
    if (!h->pid) return;
    kill(h->pid, SIGTERM);
    int status;
    for (int i = 0; i < 100; i++) {
        if (waitpid(h->pid, &status, WNOHANG) == h->pid) {
            h->pid = 0;
            return;
        }
        g_usleep(50000);
    }
    kill(h->pid, SIGKILL);
    waitpid(h->pid, &status, 0);
    h->pid = 0;
}

bool hyocr_test_hub_need(const hyocr_test_hub *h)
{
    if (!h->skip) return true;
    g_test_skip(h->skip);
    return false;
}

void hyocr_test_hub_start(hyocr_test_hub *h, const hyocr_test_hub_repo *repos, size_t n_repos)
{
    h->flat = hyocr_test_data("ckpt-flat", NULL);
    h->nested = hyocr_test_data("ckpt-nested", NULL);
    h->tmp = hyocr_test_tmpdir();
    h->hub = g_build_filename(h->tmp, "hub", NULL);
    h->log = g_build_filename(h->tmp, "access.log", NULL);
    if (!g_file_test(h->flat, G_FILE_TEST_IS_DIR) || !g_file_test(h->nested, G_FILE_TEST_IS_DIR)) {
        h->skip = g_strdup_printf("fixture checkpoints missing (%s, %s): download tests NOT RUN", h->flat, h->nested);
        return;
    }
    for (size_t i = 0; i < n_repos; i++) build_repo(h, &repos[i]);
    server_start(h);
}

void hyocr_test_hub_clear(hyocr_test_hub *h)
{
    server_stop(h);
    if (h->tmp) hyocr_test_rmdir(h->tmp);
    g_clear_pointer(&h->tmp, g_free);
    g_clear_pointer(&h->hub, g_free);
    g_clear_pointer(&h->url, g_free);
    g_clear_pointer(&h->log, g_free);
    g_clear_pointer(&h->skip, g_free);
    g_clear_pointer(&h->flat, g_free);
    g_clear_pointer(&h->nested, g_free);
}
