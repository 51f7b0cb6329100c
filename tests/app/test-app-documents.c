/* hyocr-gtk with documents, on the tiny test checkpoint: a dropped 3-page PDF becomes one
 * entry of three pages that run as one batch and answer as `hyocr run` does page by page; the
 * whole document is saved as Markdown and as a searchable PDF; a page that cannot be read is
 * marked with its reason while the others finish; an encrypted PDF asks for its password. */
#include "app-test.h"
#include "document.h"
#include <cairo-pdf.h>
#include <glib/gstdio.h>
#include <tiffio.h>

#define JOB_TIMEOUT_MS (5 * APP_TEST_WAIT_MS)

static char *tmp_dir;

static char *tmp_path(const char *name)
{
    if (!tmp_dir) tmp_dir = g_dir_make_tmp("hyocr-app-doc-XXXXXX", NULL);
    return g_build_filename(tmp_dir, name, NULL);
}

/* Three pages of 300 × 200 pt, a bar at a different place on each. */
static char *make_pdf(const char *name, int n)
{
    char *path = tmp_path(name);
    cairo_surface_t *s = cairo_pdf_surface_create(path, 300, 200);
    cairo_t *cr = cairo_create(s);
    for (int p = 0; p < n; p++) {
        cairo_set_source_rgb(cr, 0, 0, 0);
        cairo_rectangle(cr, 20 + 60 * p, 60, 120, 30);
        cairo_fill(cr);
        cairo_show_page(cr);
    }
    cairo_destroy(cr);
    cairo_surface_destroy(s);
    return path;
}

static guint n_jobs(HyocrWindow *win)
{
    return g_list_model_get_n_items(hyocr_window_get_jobs(win));
}

static gboolean worker_failed(gpointer win)
{
    return hyocr_worker_get_state(hyocr_window_get_worker(win)) == HYOCR_WORKER_FAILED;
}

static gboolean drop_file(HyocrWindow *win, const char *path)
{
    g_autoptr(GFile) file = g_file_new_for_path(path);
    g_auto(GValue) v = G_VALUE_INIT;
    g_value_init(&v, GDK_TYPE_FILE_LIST);
    g_value_take_boxed(&v, gdk_file_list_new_from_array(&file, 1));
    GtkDropTarget *target = hyocr_window_get_drop_target(win);
    GdkDragAction action = 0;
    g_signal_emit_by_name(target, "enter", 20.0, 20.0, &action);
    gboolean ok = FALSE;
    g_signal_emit_by_name(target, "drop", &v, 20.0, 20.0, &ok);
    return ok;
}

/* The labels of the widget (a header, a row), in order, joined by "|". */
static void collect_labels(GtkWidget *w, GString *out)
{
    if (GTK_IS_LABEL(w)) g_string_append_printf(out, "%s|", gtk_label_get_text(GTK_LABEL(w)));
    for (GtkWidget *c = gtk_widget_get_first_child(w); c; c = gtk_widget_get_next_sibling(c)) collect_labels(c, out);
}

static char *labels_of(GtkWidget *w)
{
    GString *s = g_string_new(NULL);
    if (w) collect_labels(w, s);
    return g_string_free(s, FALSE);
}

typedef struct {
    gboolean done, ok;
    GError  *error;
} SaveWait;

static void on_saved(GObject *source, GAsyncResult *res, gpointer data)
{
    SaveWait *w = data;
    w->ok = hyocr_window_save_finish(HYOCR_WINDOW(source), res, &w->error);
    w->done = TRUE;
}

static gboolean save_done(gpointer data)
{
    return ((SaveWait *)data)->done;
}

static void save(HyocrWindow *win, const char *path)
{
    g_autoptr(GFile) file = g_file_new_for_path(path);
    SaveWait w = { 0 };
    hyocr_window_save_to(win, file, on_saved, &w);
    g_assert_true(app_test_wait(save_done, &w, JOB_TIMEOUT_MS));
    g_assert_no_error(w.error);
    g_assert_true(w.ok);
}

static void test_pdf_document(void)
{
    app_test_reset_settings();
    g_settings_set_int(app_test_settings(), "max-new-tokens", 24);
    g_settings_set_string(app_test_settings(), "preset", "recognize");
    g_autofree char *pdf = make_pdf("scan.pdf", 3);
    /* No model yet: the three pages wait in the queue, then the worker takes them together. */
    HyocrWindow *win = app_test_window("/nonexistent/hyocr/HunyuanOCR", FALSE);
    g_assert_true(app_test_wait(worker_failed, win, APP_TEST_WAIT_MS));
    HyocrWorker *worker = hyocr_window_get_worker(win);
    hyocr_worker_set_max_batch(worker, 4);
    g_assert_true(drop_file(win, pdf));
    g_assert_cmpuint(n_jobs(win), ==, 3);
    HyocrJob *pages[3];
    for (int p = 0; p < 3; p++) {
        pages[p] = app_test_job_at(win, (guint)p);
        g_assert_cmpstr(hyocr_job_get_title(pages[p]), ==, "scan.pdf");
        g_assert_nonnull(hyocr_job_get_document(pages[p]));
        g_assert_true(hyocr_job_get_document(pages[p]) == hyocr_job_get_document(pages[0]));
        g_assert_cmpint(hyocr_job_get_page(pages[p]), ==, p);
    }
    /* One entry: a header over the first page names the document; rows say which page. */
    GtkListBoxRow *row0 = gtk_list_box_get_row_at_index(win->job_list, 0);
    GtkListBoxRow *row2 = gtk_list_box_get_row_at_index(win->job_list, 2);
    g_autofree char *header = labels_of(gtk_list_box_row_get_header(row0));
    g_assert_cmpstr(header, ==, "scan.pdf|3 pages, 0 done|");
    g_assert_null(gtk_list_box_row_get_header(row2));
    g_autofree char *row_text = labels_of(GTK_WIDGET(row2));
    g_assert_true(g_str_has_prefix(row_text, "Page 3 of 3|"));

    g_autofree char *model = app_test_data("ckpt-flat", NULL);
    g_settings_set_string(app_test_settings(), "model-folder", model);
    for (int p = 0; p < 3; p++) app_test_wait_job(pages[p], JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_worker_get_largest_batch(worker), ==, 3);
    g_autoptr(GPtrArray) cli = app_test_cli_pages("ckpt-flat", pdf, "recognize", 24);
    g_assert_cmpuint(cli->len, ==, 3);
    for (int p = 0; p < 3; p++) {
        g_assert_cmpint(hyocr_job_get_state(pages[p]), ==, HYOCR_JOB_DONE);
        g_assert_cmpstr(hyocr_job_get_text(pages[p]), ==, cli->pdata[p]);
    }
    g_free(header);
    header = labels_of(gtk_list_box_row_get_header(row0));
    g_assert_cmpstr(header, ==, "scan.pdf|3 pages, 3 done|");

    /* Saving a page saves its document: every page, in order. */
    hyocr_window_select_job(win, pages[1]);
    g_autofree char *md = tmp_path("scan.md"), *out_pdf = tmp_path("scan-ocr.pdf");
    save(win, md);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(md, &text, NULL, NULL));
    const char *at = text;
    for (int p = 0; p < 3; p++) {
        g_autofree char *mark = g_strdup_printf("<!-- %s, page %d -->\n\n", pdf, p + 1);
        const char *found = strstr(at, mark);
        g_assert_nonnull(found);
        found += strlen(mark);
        g_assert_true(g_str_has_prefix(found, hyocr_job_get_text(pages[p])));
        at = found;
    }
    save(win, out_pdf);
    g_autoptr(hyocr_document) saved = hyocr_document_open(out_pdf, NULL, NULL);
    g_assert_nonnull(saved);
    g_assert_cmpint(hyocr_document_n_pages(saved), ==, 3);
    double w, h;
    g_assert_true(hyocr_document_page_size(saved, 2, &w, &h, NULL));
    g_assert_cmpfloat(w, ==, 300);
    g_assert_cmpfloat(h, ==, 200);
    app_test_destroy_window(win);
}

/* A 3-page TIFF whose middle page libtiff cannot give as RGB (floating-point samples). */
static char *make_tiff_with_bad_page(void)
{
    char *path = tmp_path("fax.tif");
    TIFF *t = TIFFOpen(path, "w");
    for (int p = 0; p < 3; p++) {
        int bits = p == 1 ? 32 : 8;
        TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 64);
        TIFFSetField(t, TIFFTAG_IMAGELENGTH, 48);
        TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
        TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bits);
        if (p == 1) TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_IEEEFP);
        TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
        uint8_t row[64 * 4];
        for (int y = 0; y < 48; y++) {
            for (int x = 0; x < 64 * bits / 8; x++) row[x] = (uint8_t)((x + y * p) * 3);
            g_assert_cmpint(TIFFWriteScanline(t, row, (uint32_t)y, 0), ==, 1);
        }
        g_assert_true(TIFFWriteDirectory(t));
    }
    TIFFClose(t);
    return path;
}

static void test_failing_page(void)
{
    app_test_reset_settings();
    g_settings_set_int(app_test_settings(), "max-new-tokens", 12);
    g_settings_set_string(app_test_settings(), "preset", "recognize");
    g_autofree char *tif = make_tiff_with_bad_page();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_assert_true(drop_file(win, tif));
    g_assert_cmpuint(n_jobs(win), ==, 3);
    for (guint p = 0; p < 3; p++) app_test_wait_job(app_test_job_at(win, p), JOB_TIMEOUT_MS);
    HyocrJob *bad = app_test_job_at(win, 1);
    g_assert_cmpint(hyocr_job_get_state(bad), ==, HYOCR_JOB_FAILED);
    g_assert_nonnull(strstr(hyocr_job_get_message(bad), "page 2: unsupported TIFF"));
    g_assert_cmpint(hyocr_job_get_state(app_test_job_at(win, 0)), ==, HYOCR_JOB_DONE);
    g_assert_cmpint(hyocr_job_get_state(app_test_job_at(win, 2)), ==, HYOCR_JOB_DONE);
    GtkListBoxRow *row0 = gtk_list_box_get_row_at_index(win->job_list, 0);
    g_autofree char *header = labels_of(gtk_list_box_row_get_header(row0));
    g_assert_cmpstr(header, ==, "fax.tif|3 pages, 2 done, 1 failed|");
    /* the saved document marks the page with its reason */
    hyocr_window_select_job(win, app_test_job_at(win, 0));
    g_autofree char *txt = tmp_path("fax.txt");
    save(win, txt);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(txt, &text, NULL, NULL));
    g_assert_nonnull(strstr(text, ", page 2 <==\n[this page failed: "));
    g_assert_nonnull(strstr(text, "unsupported TIFF"));
    app_test_destroy_window(win);
}

static gboolean asking(gpointer win)
{
    return hyocr_window_get_password_dialog(win) != NULL;
}

static void answer(HyocrWindow *win, const char *password)
{
    g_assert_true(app_test_wait(asking, win, APP_TEST_WAIT_MS));
    AdwMessageDialog *dialog = ADW_MESSAGE_DIALOG(hyocr_window_get_password_dialog(win));
    gtk_editable_set_text(GTK_EDITABLE(adw_message_dialog_get_extra_child(dialog)), password);
    /* what the Open button does: the response, then the dialog closes */
    g_object_ref(dialog);
    adw_message_dialog_response(dialog, "open");
    gtk_window_close(GTK_WINDOW(dialog));
    g_object_unref(dialog);
}

static void test_password(void)
{
    g_autofree char *qpdf = g_find_program_in_path("qpdf");
    if (!qpdf) {
        g_test_skip("qpdf not installed (Debian package qpdf): no encrypted PDF to try");
        return;
    }
    app_test_reset_settings();
    g_settings_set_int(app_test_settings(), "max-new-tokens", 8);
    g_autofree char *plain = make_pdf("plain.pdf", 2), *secret = tmp_path("secret.pdf");
    g_autofree char *cmd = g_strdup_printf("qpdf --encrypt open-sesame owner 256 -- '%s' '%s'", plain, secret);
    int status;
    g_assert_true(g_spawn_command_line_sync(cmd, NULL, NULL, &status, NULL) && status == 0);
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_assert_true(!drop_file(win, secret));   /* nothing queued until the password is given */
    g_assert_cmpuint(n_jobs(win), ==, 0);
    AdwMessageDialog *dialog = ADW_MESSAGE_DIALOG(hyocr_window_get_password_dialog(win));
    g_assert_nonnull(strstr(adw_message_dialog_get_body(dialog), "“secret.pdf” is protected by a password."));
    answer(win, "wrong");
    g_assert_cmpuint(n_jobs(win), ==, 0);
    dialog = ADW_MESSAGE_DIALOG(hyocr_window_get_password_dialog(win));
    g_assert_nonnull(dialog);
    g_assert_nonnull(strstr(adw_message_dialog_get_body(dialog), "That password does not open “secret.pdf”."));
    answer(win, "open-sesame");
    g_assert_cmpuint(n_jobs(win), ==, 2);
    for (guint p = 0; p < 2; p++) {
        app_test_wait_job(app_test_job_at(win, p), JOB_TIMEOUT_MS);
        g_assert_cmpint(hyocr_job_get_state(app_test_job_at(win, p)), ==, HYOCR_JOB_DONE);
    }
    app_test_destroy_window(win);
}

int main(int argc, char **argv)
{
    app_test_init(&argc, &argv);
    g_test_add_func("/app/documents/pdf", test_pdf_document);
    g_test_add_func("/app/documents/failing-page", test_failing_page);
    g_test_add_func("/app/documents/password", test_password);
    int status = g_test_run();
    if (tmp_dir) {
        GDir *d = g_dir_open(tmp_dir, 0, NULL);
        for (const char *n; d && (n = g_dir_read_name(d));) {
            g_autofree char *p = g_build_filename(tmp_dir, n, NULL);
            g_unlink(p);
        }
        if (d) g_dir_close(d);
        g_rmdir(tmp_dir);
        g_free(tmp_dir);
    }
    return status;
}
