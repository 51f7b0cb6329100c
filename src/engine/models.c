/* hyocr — the installed models (see models.h). */
#include "models.h"
#include "error.h"
#include "i18n.h"
#include "json.h"

#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

#define HASH_BUF_SIZE (256 * 1024)

char *hyocr_models_dir(void)
{
    return g_build_filename(g_get_user_data_dir(), "hyocr", "models", NULL);
}

char *hyocr_models_dest(const char *parent, hyocr_model_version version)
{
    g_autofree char *root = parent ? g_strdup(parent) : hyocr_models_dir();
    return g_build_filename(root, version == HYOCR_MODEL_VERSION_1_0 ? "HunyuanOCR-1.0" : "HunyuanOCR-1.5", NULL);
}

static bool has_weights(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d)))
        if (g_str_has_suffix(name, ".safetensors")) return true;
    return false;
}

char **hyocr_models_missing_files(const char *dir)
{
    static const char *const required[] = { "config.json", "tokenizer.json" };
    g_autoptr(GStrvBuilder) b = g_strv_builder_new();
    for (gsize i = 0; i < G_N_ELEMENTS(required); i++) {
        g_autofree char *path = g_build_filename(dir, required[i], NULL);
        if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) g_strv_builder_add(b, required[i]);
    }
    if (!has_weights(dir)) g_strv_builder_add(b, "*.safetensors");
    return g_strv_builder_end(b);
}

/* The downloader writes HunyuanOCR-1.5 (or -1.0); HunyuanOCR is what earlier
 * versions asked for. A complete folder wins over one that merely exists. */
char *hyocr_models_default_folder(void)
{
    static const char *const legacy = "HunyuanOCR";
    g_autofree char *root = hyocr_models_dir();
    char *names[] = { hyocr_models_dest(root, HYOCR_MODEL_VERSION_1_5),
                      hyocr_models_dest(root, HYOCR_MODEL_VERSION_1_0), g_build_filename(root, legacy, NULL) };
    int pick = -1, existing = -1;
    for (int i = 0; i < 3 && pick < 0; i++) {
        if (!g_file_test(names[i], G_FILE_TEST_IS_DIR)) continue;
        g_auto(GStrv) missing = hyocr_models_missing_files(names[i]);
        if (!missing[0]) pick = i;
        else if (existing < 0) existing = i;
    }
    pick = pick >= 0 ? pick : existing >= 0 ? existing : 0;
    for (int i = 0; i < 3; i++)
        if (i != pick) g_free(names[i]);
    return names[pick];
}

int64_t hyocr_models_free_space(const char *path)
{
    g_autofree char *p = g_strdup(path);
    while (!g_file_test(p, G_FILE_TEST_IS_DIR)) {
        char *parent = g_path_get_dirname(p);
        bool top = !strcmp(parent, p);
        g_free(p);
        p = parent;
        if (top) break;
    }
    g_autoptr(GFile) f = g_file_new_for_path(p);
    g_autoptr(GFileInfo) info = g_file_query_filesystem_info(f, G_FILE_ATTRIBUTE_FILESYSTEM_FREE, NULL, NULL);
    if (!info || !g_file_info_has_attribute(info, G_FILE_ATTRIBUTE_FILESYSTEM_FREE)) return -1;
    return (int64_t)g_file_info_get_attribute_uint64(info, G_FILE_ATTRIBUTE_FILESYSTEM_FREE);
}

/* ---- records ---- */

JsonObject *hyocr_models_record_file(JsonObject *record, const char *name)
{
    JsonNode *n = record ? json_object_get_member(record, "files") : NULL;
    if (!n || !JSON_NODE_HOLDS_ARRAY(n)) return NULL;
    JsonArray *a = json_node_get_array(n);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonNode *e = json_array_get_element(a, i);
        JsonObject *o = JSON_NODE_HOLDS_OBJECT(e) ? json_node_get_object(e) : NULL;
        if (o && !g_strcmp0(hyocr_json_str(o, "name"), name)) return o;
    }
    return NULL;
}

int64_t hyocr_models_file_size(const char *path)
{
    GStatBuf st;
    return g_stat(path, &st) == 0 && S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1;
}

/* ---- one folder ---- */

void hyocr_model_entry_free(hyocr_model_entry *e)
{
    if (!e) return;
    g_free(e->dir);
    g_free(e->name);
    g_free(e->version);
    g_free(e->repo);
    g_free(e->revision);
    g_free(e->commit);
    g_free(e->endpoint);
    g_free(e->verified_at);
    g_free(e->problem);
    g_free(e);
}

static int64_t folder_bytes(const char *dir)
{
    int64_t sum = 0;
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        sum += MAX(hyocr_models_file_size(p), 0);
    }
    return sum;
}

static char *sha256_of_file(const char *path, GError **error)
{
    g_autoptr(GFile) file = g_file_new_for_path(path);
    g_autoptr(GFileInputStream) in = g_file_read(file, NULL, error);
    if (!in) return NULL;
    g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
    g_autofree guint8 *buf = g_malloc(HASH_BUF_SIZE);
    for (;;) {
        gssize n = g_input_stream_read(G_INPUT_STREAM(in), buf, HASH_BUF_SIZE, NULL, error);
        if (n < 0) return NULL;
        if (n == 0) break;
        g_checksum_update(sum, buf, n);
    }
    return g_strdup(g_checksum_get_string(sum));
}

/* Raises e->state to s if worse, keeping the first problem's text. */
static void note(hyocr_model_entry *e, hyocr_model_state s, char *problem)
{
    static const int rank[] = { [HYOCR_MODEL_STATE_VERIFIED] = 0, [HYOCR_MODEL_STATE_CHANGED] = 1,
                                [HYOCR_MODEL_STATE_CORRUPT] = 2, [HYOCR_MODEL_STATE_INCOMPLETE] = 3,
                                [HYOCR_MODEL_STATE_UNMANAGED] = 0 };
    if (rank[s] > rank[e->state]) e->state = s;
    if (!e->problem) e->problem = problem;
    else g_free(problem);
}

static void check_manifest_file(hyocr_model_entry *e, JsonObject *f, gboolean rehash)
{
    const char *name = hyocr_json_str(f, "name");
    /* the model's files, and the draft's in dflash/ (issue 20); nothing else outside the folder */
    const char *slash = name ? strchr(name, '/') : NULL;
    if (!name || (slash && (strncmp(name, "dflash/", 7) || strchr(slash + 1, '/') || !strcmp(slash + 1, "..")))) return;
    g_autofree char *path = g_build_filename(e->dir, name, NULL);
    int64_t want = hyocr_json_int(f, "size");
    GStatBuf st;
    e->n_files++;
    if (g_stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        note(e, HYOCR_MODEL_STATE_INCOMPLETE, g_strdup_printf(_("%s is missing"), name));
        return;
    }
    e->size += st.st_size;
    if (st.st_size != want) {
        note(e, HYOCR_MODEL_STATE_CHANGED, g_strdup_printf(_("%s has %lld bytes, %lld when verified"), name,
                                                          (long long)st.st_size, (long long)want));
        return;
    }
    const char *sha = hyocr_json_str(f, "sha256") ? hyocr_json_str(f, "sha256")
                                                         : hyocr_json_str(f, "content_sha256");
    if (rehash && sha) {
        g_autoptr(GError) err = NULL;
        g_autofree char *got = sha256_of_file(path, &err);
        if (!got) note(e, HYOCR_MODEL_STATE_CORRUPT, g_strdup_printf("%s: %s", name, err->message));
        else if (strcmp(got, sha))
            note(e, HYOCR_MODEL_STATE_CORRUPT, g_strdup_printf(_("%s: sha256 %s, expected %s"), name, got, sha));
        return;
    }
    int64_t mtime = hyocr_json_int(f, "mtime");
    if (mtime >= 0 && mtime != (int64_t)st.st_mtime)
        note(e, HYOCR_MODEL_STATE_CHANGED, g_strdup_printf(_("%s was modified after it was verified"), name));
}

static bool has_file(const char *dir, const char *name)
{
    g_autofree char *p = g_build_filename(dir, name, NULL);
    return g_file_test(p, G_FILE_TEST_IS_REGULAR);
}

static void check_unmanaged(hyocr_model_entry *e)
{
    e->state = HYOCR_MODEL_STATE_UNMANAGED;
    e->size = folder_bytes(e->dir);
    if (!has_file(e->dir, "config.json"))
        e->problem = g_strdup(_("no config.json: not a model folder"));
    else if (!has_file(e->dir, "model.safetensors") && !has_file(e->dir, "model.safetensors.index.json"))
        e->problem = g_strdup(_("no model.safetensors or model.safetensors.index.json"));
    else
        e->problem = g_strdup_printf(_("no %s record: files not verified"), HYOCR_DOWNLOAD_MANIFEST);
}

static void fill_from(hyocr_model_entry *e, JsonObject *m)
{
    e->version = g_strdup(hyocr_json_str(m, "version"));
    e->repo = g_strdup(hyocr_json_str(m, "repo"));
    e->revision = g_strdup(hyocr_json_str(m, "revision"));
    e->commit = g_strdup(hyocr_json_str(m, "commit"));
    e->endpoint = g_strdup(hyocr_json_str(m, "endpoint"));
    e->verified_at = g_strdup(hyocr_json_str(m, "verified_at"));
}

/* Only an interrupted download: what its state says, and how far it got. */
static hyocr_model_entry *check_partial(hyocr_model_entry *e, const char *partial)
{
    g_autofree char *state_path = g_build_filename(partial, HYOCR_MODELS_PARTIAL_STATE, NULL);
    JsonObject *state = hyocr_json_load_object(state_path);
    if (state) {
        fill_from(e, state);
        json_object_unref(state);
    }
    e->state = HYOCR_MODEL_STATE_INCOMPLETE;
    g_autofree char *got = g_format_size((guint64)MAX(e->partial_bytes, 0));
    e->problem = g_strdup_printf(_("download interrupted (%s so far) — run the download again to resume"), got);
    return e;
}

hyocr_model_entry *hyocr_model_check(const char *dir, gboolean rehash, GError **error)
{
    g_autoptr(hyocr_model_entry) e = g_new0(hyocr_model_entry, 1);
    e->dir = g_canonicalize_filename(dir, NULL);
    e->name = g_path_get_basename(e->dir);
    g_autofree char *partial = g_strconcat(e->dir, ".partial", NULL);
    bool has_partial = g_file_test(partial, G_FILE_TEST_IS_DIR);
    if (has_partial) e->partial_bytes = folder_bytes(partial);
    if (!g_file_test(e->dir, G_FILE_TEST_IS_DIR)) {
        if (has_partial) return check_partial(g_steal_pointer(&e), partial);
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: no such model folder"), e->dir);
        return NULL;
    }
    g_autofree char *mpath = g_build_filename(e->dir, HYOCR_DOWNLOAD_MANIFEST, NULL);
    JsonObject *m = hyocr_json_load_object(mpath);
    if (!m) {
        check_unmanaged(e);
        return g_steal_pointer(&e);
    }
    fill_from(e, m);
    e->state = HYOCR_MODEL_STATE_VERIFIED;
    e->rehashed = rehash;
    JsonNode *files = json_object_get_member(m, "files");
    if (files && JSON_NODE_HOLDS_ARRAY(files)) {
        JsonArray *a = json_node_get_array(files);
        for (guint i = 0; i < json_array_get_length(a); i++) {
            JsonNode *n = json_array_get_element(a, i);
            if (JSON_NODE_HOLDS_OBJECT(n)) check_manifest_file(e, json_node_get_object(n), rehash);
        }
    }
    if (e->n_files == 0) note(e, HYOCR_MODEL_STATE_INCOMPLETE, g_strdup(_("the download record lists no files")));
    json_object_unref(m);
    return g_steal_pointer(&e);
}

/* ---- a folder of models ---- */

static int by_entry_name(gconstpointer a, gconstpointer b)
{
    const hyocr_model_entry *x = *(hyocr_model_entry *const *)a, *y = *(hyocr_model_entry *const *)b;
    return strcmp(x->name, y->name);
}

GPtrArray *hyocr_models_scan(const char *root, gboolean rehash, GError **error)
{
    g_autofree char *dir = root ? g_strdup(root) : hyocr_models_dir();
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)hyocr_model_entry_free);
    if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) return out;
    g_autoptr(GDir) d = g_dir_open(dir, 0, error);
    if (!d) {
        g_ptr_array_unref(out);
        return NULL;
    }
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    const char *name;
    while ((name = g_dir_read_name(d))) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        if (!g_file_test(path, G_FILE_TEST_IS_DIR) || g_str_has_suffix(name, ".old")) continue;
        g_autofree char *base = g_str_has_suffix(name, ".partial") ? g_strndup(name, strlen(name) - 8) : g_strdup(name);
        if (!*base || g_hash_table_contains(seen, base)) continue;
        g_autofree char *model = g_build_filename(dir, base, NULL);
        hyocr_model_entry *e = hyocr_model_check(model, rehash, NULL);
        if (!e) continue;
        /* a folder hyocr did not fill counts when it holds a checkpoint's config */
        bool looks_like_model = e->state != HYOCR_MODEL_STATE_UNMANAGED || has_file(e->dir, "config.json");
        g_hash_table_add(seen, g_steal_pointer(&base));
        if (looks_like_model) g_ptr_array_add(out, e);
        else hyocr_model_entry_free(e);
    }
    g_ptr_array_sort(out, by_entry_name);
    return out;
}
