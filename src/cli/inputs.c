/* hyocr run — what to read: files and folders (the readable formats of a folder, by name),
 * each opened as a document, the pages --pages selects of every multi-page one, each
 * --repeat times, in order. A file that cannot be opened stays in the list with its reason,
 * so a run over a folder reports it among the pages that did run. */
#include "cli.h"
#include "error.h"
#include <glib/gi18n.h>
#include <string.h>

void hyocr_cli_page_free(hyocr_cli_page *p)
{
    if (!p) return;
    g_free(p->path);
    g_free(p->label);
    if (p->doc) hyocr_document_unref(p->doc);
    if (p->error) g_error_free(p->error);
    g_free(p);
}

static int cmp_str(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of a folder whose names say a readable format (document.h), by name; the
 * others (subfolders too: a folder is not descended into) go to skipped. */
static bool add_folder(const char *dir, GPtrArray *out, GPtrArray *skipped, GError **error)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, error);
    if (!d) return false;
    g_autoptr(GPtrArray) found = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) other = g_ptr_array_new_with_free_func(g_free);
    const char *name;
    while ((name = g_dir_read_name(d)))
        g_ptr_array_add(hyocr_format_name_matches(name) ? found : other, g_build_filename(dir, name, NULL));
    g_ptr_array_sort(other, cmp_str);
    for (guint i = 0; skipped && i < other->len; i++) g_ptr_array_add(skipped, g_strdup(other->pdata[i]));
    if (found->len == 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: the folder holds no image or document hyocr reads"),
                    dir);
        return false;
    }
    g_ptr_array_sort(found, cmp_str);
    for (guint i = 0; i < found->len; i++) g_ptr_array_add(out, g_strdup(found->pdata[i]));
    return true;
}

static bool add_paths(char **paths, GPtrArray *out, GPtrArray *skipped, GError **error)
{
    for (char **p = paths; p && *p; p++) {
        if (g_file_test(*p, G_FILE_TEST_IS_DIR)) {
            if (!add_folder(*p, out, skipped, error)) return false;
        } else {
            g_ptr_array_add(out, g_strdup(*p));
        }
    }
    return true;
}

static hyocr_cli_page *page_new(const char *path, hyocr_document *doc, int page, GError *error)
{
    hyocr_cli_page *p = g_new0(hyocr_cli_page, 1);
    p->path = g_strdup(path);
    p->doc = doc ? hyocr_document_ref(doc) : NULL;
    p->page = page;
    p->n_pages = doc ? hyocr_document_n_pages(doc) : 1;
    p->label = p->n_pages > 1 ? g_strdup_printf(_("%s, page %d"), path, page + 1) : g_strdup(path);
    p->error = error;
    return p;
}

/* The pages of one file: all of them, or what --pages selects of a document of several. */
static bool add_document(const char *path, const hyocr_cli_inputs *in, GPtrArray *once, GError **error)
{
    hyocr_document_options o = { .password = in->password };
    GError *err = NULL;
    g_autoptr(hyocr_document) doc = hyocr_document_open(path, &o, &err);
    if (!doc) {
        g_ptr_array_add(once, page_new(path, NULL, 0, err));
        return true;
    }
    int n = hyocr_document_n_pages(doc);
    g_autoptr(GArray) sel = NULL;
    if (in->pages && n > 1) {
        sel = hyocr_page_selection_parse(in->pages, n, error);
        if (!sel) {
            g_prefix_error(error, "%s: ", path);
            return false;
        }
    }
    guint count = sel ? sel->len : (guint)n;
    for (guint i = 0; i < count; i++)
        g_ptr_array_add(once, page_new(path, doc, sel ? g_array_index(sel, int, i) : (int)i, NULL));
    return true;
}

GPtrArray *hyocr_cli_collect_pages(const hyocr_cli_inputs *in, GPtrArray *skipped, GError **error)
{
    g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
    if (!add_paths(in->images, paths, skipped, error) || !add_paths(in->rest, paths, skipped, error)) return NULL;
    g_autoptr(GPtrArray) once = g_ptr_array_new_with_free_func((GDestroyNotify)hyocr_cli_page_free);
    for (guint i = 0; i < paths->len; i++) {
        if (once->len > HYOCR_CLI_MAX_JOBS) break;   /* refused below; no need to open the rest */
        if (!add_document(paths->pdata[i], in, once, error)) return NULL;
    }
    int repeat = MAX(in->repeat, 1);
    /* every job keeps its result (text, ids) until the run ends */
    if ((int64_t)once->len * repeat > HYOCR_CLI_MAX_JOBS) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("%u page(s) × --repeat %d make more than the %d jobs one run takes; split the run"),
                    once->len, repeat, HYOCR_CLI_MAX_JOBS);
        return NULL;
    }
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)hyocr_cli_page_free);
    for (guint i = 0; i < once->len; i++) {
        const hyocr_cli_page *p = once->pdata[i];
        for (int r = 0; r < repeat; r++)
            g_ptr_array_add(out, page_new(p->path, p->doc, p->page, p->error ? g_error_copy(p->error) : NULL));
    }
    return out;
}
