/* Screenshots for the metainfo: the empty window, a job writing its answer, a
 * spotting result with boxes, a parsed page rendered and a screen capture's result, rendered under Xvfb with the app's own
 * renderer and saved as PNG in $HYOCR_SCREENSHOT_DIR (`ninja screenshots`
 * points it at data/screenshots/).
 *
 * The window, worker, gauge and views are the real ones on the tiny test
 * checkpoint. The tiny checkpoint writes random tokens, so the two result
 * screenshots show the answer a working model gives for the sample page this
 * program draws: its own lines and their measured boxes, posted through the
 * same job API the worker uses. With HYOCR_SCREENSHOT_MODEL set to a real
 * HunyuanOCR folder the jobs run on that model instead. */
#include "app-test.h"
#include "hyocr-build-config.h"
#include "hyocr-history.h"
#include "hyocr-image-util.h"
#include <glib/gstdio.h>
#include <glib/gi18n.h>
#include <locale.h>
#include <pango/pangocairo.h>

#define WIN_W 1100
#define WIN_H 720
#define PAGE_W 860
#define PAGE_H 620

static const char *const page_lines[] = {
    "Invoice No. 2024-117",
    "Northwind Paper Co.",
    "42 Harbour Street, Portsmouth",
    "Date: 14 March 2024",
    "A4 copy paper, 10 reams    €42.00",
    "Toner cartridge, 2 pcs    €118.50",
    "Total    €160.50",
};

typedef struct {
    GdkTexture *texture;
    GString    *spotting;   /* text(x1,y1),(x2,y2) per line, 0…1000 */
} SamplePage;

static void draw_line(cairo_t *cr, PangoLayout *layout, const char *text, const char *font, double y, GString *spot)
{
    g_autoptr(PangoFontDescription) desc = pango_font_description_from_string(font);
    pango_layout_set_font_description(layout, desc);
    pango_layout_set_text(layout, text, -1);
    PangoRectangle ink;
    pango_layout_get_pixel_extents(layout, &ink, NULL);
    double x = 70;
    cairo_move_to(cr, x, y);
    pango_cairo_show_layout(cr, layout);
    int x1 = (int)((x + ink.x) * 1000 / PAGE_W), y1 = (int)((y + ink.y) * 1000 / PAGE_H);
    int x2 = (int)((x + ink.x + ink.width) * 1000 / PAGE_W), y2 = (int)((y + ink.y + ink.height) * 1000 / PAGE_H);
    g_string_append_printf(spot, "%s(%d,%d),(%d,%d)\n", text, x1, y1, x2, y2);
}

static SamplePage sample_page(void)
{
    cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, PAGE_W, PAGE_H);
    cairo_t *cr = cairo_create(surface);
    cairo_set_source_rgb(cr, 0.98, 0.97, 0.94);
    cairo_paint(cr);
    cairo_set_source_rgb(cr, 0.12, 0.12, 0.14);
    PangoLayout *layout = pango_cairo_create_layout(cr);
    SamplePage page = { .spotting = g_string_new(NULL) };
    const double ys[] = { 60, 150, 190, 260, 360, 410, 500 };
    for (gsize i = 0; i < G_N_ELEMENTS(page_lines); i++)
        draw_line(cr, layout, page_lines[i], i == 0 ? "DejaVu Sans Bold 30" : i == 6 ? "DejaVu Sans Bold 20" : "DejaVu Serif 19",
                  ys[i], page.spotting);
    cairo_set_line_width(cr, 1.5);
    cairo_move_to(cr, 70, 470);
    cairo_line_to(cr, PAGE_W - 70, 470);
    cairo_stroke(cr);
    g_object_unref(layout);
    cairo_destroy(cr);
    cairo_surface_flush(surface);
    g_autoptr(GBytes) bytes = g_bytes_new(cairo_image_surface_get_data(surface),
                                          (gsize)cairo_image_surface_get_stride(surface) * PAGE_H);
    page.texture = gdk_memory_texture_new(PAGE_W, PAGE_H, GDK_MEMORY_B8G8R8A8_PREMULTIPLIED, bytes,
                                          (gsize)cairo_image_surface_get_stride(surface));
    cairo_surface_destroy(surface);
    return page;
}

static const char *out_dir(void)
{
    static char *dir;
    if (!dir) {
        const char *env = g_getenv("HYOCR_SCREENSHOT_DIR");
        dir = env ? g_strdup(env) : g_build_filename(g_get_tmp_dir(), "hyocr-screenshots", NULL);
        g_mkdir_with_parents(dir, 0755);
    }
    return dir;
}

static void save_window(HyocrWindow *win, const char *name)
{
    GtkWidget *w = GTK_WIDGET(win);
    app_test_wait_drawn(w);
    g_autoptr(GdkTexture) tex = app_test_render(w);
    g_assert_nonnull(tex);
    if (!tex) return;
    g_autofree char *path = g_build_filename(out_dir(), name, NULL);
    g_assert_true(gdk_texture_save_to_png(tex, path));
    int width = gdk_texture_get_width(tex);
    g_test_message("wrote %s (%d×%d)", path, width, gdk_texture_get_height(tex));
    g_assert_cmpint(width, >=, WIN_W - 50);
    g_autoptr(GdkTexture) back = gdk_texture_new_from_filename(path, NULL);
    g_assert_nonnull(back);
    g_assert_cmpint(gdk_texture_get_width(back), ==, width);
}

static const char *real_model(void)
{
    return g_getenv("HYOCR_SCREENSHOT_MODEL");
}

/* A folder named like the real model, so the header reads "HunyuanOCR on the CPU". */
static char *model_link(void)
{
    if (real_model()) return g_strdup(real_model());
    g_autofree char *tmp = g_dir_make_tmp("hyocr-shot-XXXXXX", NULL);
    char *link = g_build_filename(tmp, "HunyuanOCR", NULL);
    g_autofree char *target = app_test_data("ckpt-flat", NULL);
    g_assert_cmpint(symlink(target, link), ==, 0);
    return link;
}

static HyocrWindow *screenshot_window(void)
{
    app_test_reset_settings();
    /* the other pictures show the window as on a first start: nothing in the history */
    g_settings_set_boolean(app_test_settings(), "history", FALSE);
    g_settings_set_int(app_test_settings(), "window-width", WIN_W);
    g_settings_set_int(app_test_settings(), "window-height", WIN_H);
    g_autofree char *model = model_link();
    return app_test_window(model, TRUE);
}

static void test_empty(void)
{
    HyocrWindow *win = screenshot_window();
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "empty");
    save_window(win, "empty-state.png");
    app_test_destroy_window(win);
}

/* Staged: the job is claimed first, so the worker skips it and the answer
 * comes from the posts below (see the header comment). */
static HyocrJob *staged_job(HyocrWindow *win, GdkTexture *texture, HyocrPreset preset)
{
    g_settings_set_enum(app_test_settings(), "preset", preset);
    g_autoptr(HyocrJobOptions) opts = hyocr_job_options_new_from_settings(app_test_settings(), NULL);
    HyocrJob *job = hyocr_job_new_for_texture(texture, "invoice-2024-117.png", opts, NULL);
    if (!real_model()) g_assert_true(hyocr_job_claim(job));
    hyocr_window_add_job(win, job);
    return job;
}

static const char *const markdown[] = {
    "# Invoice No. 2024-117\n\n", "Northwind Paper Co.  \n", "42 Harbour Street, Portsmouth\n\n",
    "Date: 14 March 2024\n\n", "<table>\n<tr><td>A4 copy paper, 10 reams</td><td>€42.00</td></tr>\n",
    "<tr><td>Toner cartridge, 2 pcs</td>",
};

/* The job has the text and the view shows it (pieces go in after a frame). */
static gboolean shows_text(gpointer data)
{
    gpointer *d = data;
    if (hyocr_job_get_state(d[0]) != HYOCR_JOB_WRITING || !g_str_equal(hyocr_job_get_text(d[0]), d[1])) return FALSE;
    GtkTextBuffer *buf = gtk_text_view_get_buffer(hyocr_result_view_get_text_view(d[2]));
    g_autofree char *shown = NULL;
    g_object_get(buf, "text", &shown, NULL);
    return g_str_equal(shown, d[1]);
}

static gboolean rendered(gpointer view)
{
    return !hyocr_result_view_is_rendering(view);
}

static void test_running(void)
{
    HyocrWindow *win = screenshot_window();
    SamplePage page = sample_page();
    g_autoptr(HyocrJob) job = staged_job(win, page.texture, HYOCR_PRESET_PARSE_DOCUMENT);
    if (!real_model()) {
        hyocr_job_post_state(job, HYOCR_JOB_PREPARING);
        hyocr_job_post_state(job, HYOCR_JOB_WRITING);
        g_autoptr(GString) all = g_string_new(NULL);
        for (gsize i = 0; i < G_N_ELEMENTS(markdown); i++) {
            hyocr_job_post_piece(job, markdown[i], 9 * (int)(i + 1));
            g_string_append(all, markdown[i]);
        }
        gpointer d[3] = { job, all->str, hyocr_window_get_result_view(win) };
        g_assert_true(app_test_wait(shows_text, d, APP_TEST_WAIT_MS));
    }
    save_window(win, "running-job.png");
    g_assert_true(hyocr_job_is_active(job) || real_model());
    hyocr_job_cancel(job);
    if (!real_model()) hyocr_job_post_finish(job, HYOCR_JOB_CANCELLED, NULL, "");
    app_test_wait_job(job, APP_TEST_WAIT_MS);
    app_test_destroy_window(win);
    g_object_unref(page.texture);
    g_string_free(page.spotting, TRUE);
}

static void test_spotting(void)
{
    HyocrWindow *win = screenshot_window();
    SamplePage page = sample_page();
    g_autoptr(HyocrJob) job = staged_job(win, page.texture, HYOCR_PRESET_SPOTTING);
    if (!real_model()) {
        hyocr_job_post_state(job, HYOCR_JOB_PREPARING);
        hyocr_job_post_piece(job, page.spotting->str, 64);
        hyocr_job_post_finish(job, HYOCR_JOB_DONE, page.spotting->str, NULL);
    }
    app_test_wait_job(job, 120000);
    HyocrResultView *view = hyocr_window_get_result_view(win);
    HyocrImageView *iv = hyocr_result_view_get_image_view(view);
    g_assert_cmpuint(hyocr_image_view_get_n_boxes(iv), ==, real_model() ? hyocr_image_view_get_n_boxes(iv) : G_N_ELEMENTS(page_lines));
    hyocr_image_view_set_highlight(iv, 4);   /* as when the pointer rests on the fifth line */
    save_window(win, "spotting-result.png");
    app_test_destroy_window(win);
    g_object_unref(page.texture);
    g_string_free(page.spotting, TRUE);
}

/* The history page on start: a staged history (the entries a week of use leaves), written
 * through the history's own API into this program's data folder. */
typedef struct {
    const char         *title, *text, *error;
    hyocr_history_state state;
    const char         *preset;
    int                 days_ago, minutes;
} StagedEntry;

static void stage_history(const StagedEntry *entries, gsize n)
{
    g_autofree char *path = hyocr_history_default_path();
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    g_remove(path);
    g_remove(wal);
    g_autoptr(hyocr_history) h = hyocr_history_open(path, NULL, NULL);
    g_assert_nonnull(h);
    g_autoptr(GDateTime) now = g_date_time_new_now_local();
    g_autoptr(GDateTime) today = g_date_time_new_local(g_date_time_get_year(now), g_date_time_get_month(now),
                                                       g_date_time_get_day_of_month(now), 9, 0, 0);
    for (gsize i = 0; i < n; i++) {
        g_autoptr(hyocr_history_entry) e = hyocr_history_entry_new();
        g_autoptr(GDateTime) day = g_date_time_add_days(today, -entries[i].days_ago);
        g_autoptr(GDateTime) when = g_date_time_add_minutes(day, entries[i].minutes);
        e->created = g_date_time_to_unix(when) * G_USEC_PER_SEC;
        e->title = g_strdup(entries[i].title);
        e->path = g_build_filename(g_get_home_dir(), "Documents", entries[i].title, NULL);
        e->preset = g_strdup(entries[i].preset);
        e->options = g_strdup("{}");
        g_assert_true(hyocr_history_add(h, e, NULL));
        e->state = entries[i].state;
        e->text = g_strdup(entries[i].text ? entries[i].text : "");
        e->error = g_strdup(entries[i].error);
        if (e->state != HYOCR_HISTORY_QUEUED) g_assert_true(hyocr_history_finish(h, e, NULL));
    }
}

static HyocrWindow *history_window(const StagedEntry *entries, gsize n)
{
    stage_history(entries, n);
    app_test_reset_settings();
    g_settings_set_int(app_test_settings(), "window-width", WIN_W);
    g_settings_set_int(app_test_settings(), "window-height", WIN_H);
    g_autofree char *model = model_link();
    HyocrWindow *win = app_test_window(model, TRUE);
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "history");
    g_assert_cmpuint(hyocr_history_view_get_n_entries(hyocr_window_get_history_view(win)), ==, n);
    return win;
}

/* Oldest first; the page shows them newest first. */
static const StagedEntry history_en[] = {
    { "lecture-notes-p3.jpg", "Week 6 — Fourier series. Any periodic signal is a sum of sines and cosines…", NULL,
      HYOCR_HISTORY_DONE, "recognize", 3, 120 },
    { "whiteboard.png", NULL, NULL, HYOCR_HISTORY_INTERRUPTED, "recognize", 2, 40 },
    { "scan-0042.tiff", NULL, "The job does not fit in the memory allowed", HYOCR_HISTORY_FAILED, "parse-document", 1, 15 },
    { "street-sign.jpg", "Rue de la République → Gare SNCF 400 m", NULL, HYOCR_HISTORY_DONE, "spotting", 1, 300 },
    { "menu.jpg", "Soup of the day — pumpkin and ginger, 6.50", NULL, HYOCR_HISTORY_DONE, "translate", 0, 30 },
    { "invoice-2024-117.png", "# Invoice No. 2024-117\n\nNorthwind Paper Co. — Total €160.50", NULL,
      HYOCR_HISTORY_DONE, "parse-document", 0, 90 },
};

static void test_history(void)
{
    HyocrWindow *win = history_window(history_en, G_N_ELEMENTS(history_en));
    save_window(win, "history.png");
    app_test_destroy_window(win);
}

static const StagedEntry history_zh[] = {
    { "课堂笔记-第3页.jpg", "第六周——傅里叶级数。任何周期信号都可以写成正弦和余弦之和……", NULL, HYOCR_HISTORY_DONE,
      "recognize", 3, 120 },
    { "白板.png", NULL, NULL, HYOCR_HISTORY_INTERRUPTED, "recognize", 2, 40 },
    { "扫描-0042.tiff", NULL, "任务超出允许的内存", HYOCR_HISTORY_FAILED, "parse-document", 1, 15 },
    { "路牌.jpg", "人民路 → 火车站 400 米", NULL, HYOCR_HISTORY_DONE, "spotting", 1, 300 },
    { "菜单.jpg", "今日例汤——南瓜姜汤，6.50 元", NULL, HYOCR_HISTORY_DONE, "translate", 0, 30 },
    { "发票-2024-117.png", "# 发票号码 2024-117\n\n北风纸业有限公司——合计 ¥160.50", NULL, HYOCR_HISTORY_DONE,
      "parse-document", 0, 90 },
};

static const char parsed_invoice[] =
    "# Invoice No. 2024-117\n\nNorthwind Paper Co.  \n42 Harbour Street, Portsmouth\n\n**Date:** 14 March 2024\n\n"
    "<table><tr><th>Item</th><th>Price</th></tr>"
    "<tr><td>A4 copy paper, 10 reams</td><td>€42.00</td></tr>"
    "<tr><td>Toner cartridge, 2 pcs</td><td>€118.50</td></tr>"
    "<tr><th>Total</th><th>€160.50</th></tr></table>\n";

/* A parse answer rendered: the heading, the lines and the table as a table. */
static void test_parsed(void)
{
    HyocrWindow *win = screenshot_window();
    SamplePage page = sample_page();
    g_autoptr(HyocrJob) job = staged_job(win, page.texture, HYOCR_PRESET_PARSE_DOCUMENT);
    if (!real_model()) {
        hyocr_job_post_state(job, HYOCR_JOB_PREPARING);
        hyocr_job_post_piece(job, parsed_invoice, 96);
        hyocr_job_post_finish(job, HYOCR_JOB_DONE, parsed_invoice, NULL);
    }
    app_test_wait_job(job, 120000);
    HyocrResultView *view = hyocr_window_get_result_view(win);
    g_assert_true(app_test_wait(rendered, view, APP_TEST_WAIT_MS));
    g_assert_cmpstr(hyocr_result_view_get_visible_page(view), ==, "rendered");
    save_window(win, "parse-result.png");
    app_test_destroy_window(win);
    g_object_unref(page.texture);
    g_string_free(page.spotting, TRUE);
}

/* A capture's result: what Capture Screen Region leaves in the window (its "Open"), a
 * region of the screen (a paragraph of a web page) read with Recognize Text. Staged as
 * the others are; the job carries the title the capture gives it. */
#define REGION_W 560
#define REGION_H 150

static GdkTexture *screen_region(const char *const *lines, gsize n)
{
    cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, REGION_W, REGION_H);
    cairo_t *cr = cairo_create(surface);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.22);
    PangoLayout *layout = pango_cairo_create_layout(cr);
    for (gsize i = 0; i < n; i++) {
        g_autoptr(PangoFontDescription) desc = pango_font_description_from_string(i == 0 ? "Sans Bold 17" : "Sans 13");
        pango_layout_set_font_description(layout, desc);
        pango_layout_set_text(layout, lines[i], -1);
        cairo_move_to(cr, 18, i == 0 ? 14 : 30 + 26.0 * (double)i);
        pango_cairo_show_layout(cr, layout);
    }
    g_object_unref(layout);
    cairo_destroy(cr);
    cairo_surface_flush(surface);
    g_autoptr(GBytes) bytes = g_bytes_new(cairo_image_surface_get_data(surface),
                                          (gsize)cairo_image_surface_get_stride(surface) * REGION_H);
    GdkTexture *t = gdk_memory_texture_new(REGION_W, REGION_H, GDK_MEMORY_B8G8R8A8_PREMULTIPLIED, bytes,
                                           (gsize)cairo_image_surface_get_stride(surface));
    cairo_surface_destroy(surface);
    return t;
}

/* The result view's text is the answer (it is filled after a frame). */
static gboolean view_shows(gpointer data)
{
    gpointer *d = data;
    GtkTextBuffer *buf = gtk_text_view_get_buffer(hyocr_result_view_get_text_view(d[0]));
    g_autofree char *shown = NULL;
    g_object_get(buf, "text", &shown, NULL);
    return g_str_equal(shown, d[1]);
}

static void save_capture(const char *const *lines, gsize n, const char *name)
{
    HyocrWindow *win = screenshot_window();
    g_autoptr(GdkTexture) region = screen_region(lines, n);
    g_settings_set_enum(app_test_settings(), "preset", HYOCR_PRESET_RECOGNIZE);
    g_autoptr(HyocrJobOptions) opts = hyocr_job_options_new_from_settings(app_test_settings(), NULL);
    g_autoptr(HyocrJob) job = hyocr_job_new_for_texture(region, _("Screen Capture"), opts, NULL);
    if (!real_model()) g_assert_true(hyocr_job_claim(job));
    hyocr_window_add_job(win, job);
    g_autofree char *joined = g_strjoinv("\n", (char **)lines);
    if (!real_model()) {
        hyocr_job_post_state(job, HYOCR_JOB_PREPARING);
        hyocr_job_post_piece(job, joined, 48);
        hyocr_job_post_finish(job, HYOCR_JOB_DONE, joined, NULL);
    }
    app_test_wait_job(job, 120000);
    g_assert_cmpstr(hyocr_job_get_title(job), ==, _("Screen Capture"));
    gpointer d[2] = { hyocr_window_get_result_view(win), (gpointer)hyocr_job_get_text(job) };
    g_assert_true(app_test_wait(view_shows, d, APP_TEST_WAIT_MS));
    save_window(win, name);
    app_test_destroy_window(win);
}

static const char *const region_en[] = {
    "Release notes — version 2.4",
    "The export dialog remembers the last folder you chose.",
    "Large PDF files open up to three times faster.",
    "Fixed: the sidebar no longer hides after a restart.",
    NULL,
};

static void test_capture(void)
{
    save_capture(region_en, g_strv_length((char **)region_en), "capture-result.png");
}

static const char *const region_zh[] = {
    "版本 2.4 更新说明",
    "导出对话框会记住上次选择的文件夹。",
    "大型 PDF 文件的打开速度最多提高三倍。",
    "已修复：重启后侧边栏不再被隐藏。",
    NULL,
};

/* The empty window in Chinese, from this build's catalogs (po/). Last: it
 * switches the process's locale. */
static void test_empty_zh_cn(void)
{
    const char *catalogs = g_getenv("HYOCR_LOCALEDIR");
    g_autofree char *mo = catalogs ? g_build_filename(catalogs, "zh_CN", "LC_MESSAGES", GETTEXT_PACKAGE ".mo", NULL) : NULL;
    if (!mo || !g_file_test(mo, G_FILE_TEST_EXISTS)) {
        g_test_skip("no zh_CN catalog in this build (HYOCR_LOCALEDIR)");
        return;
    }
    if (!setlocale(LC_ALL, "zh_CN.UTF-8")) {
        g_test_skip("the zh_CN.UTF-8 locale is not installed");
        return;
    }
    g_setenv("LANGUAGE", "zh_CN", TRUE);
    bindtextdomain(GETTEXT_PACKAGE, catalogs);
    bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
    textdomain(GETTEXT_PACKAGE);
    g_assert_cmpstr(_("Drop an Image"), !=, "Drop an Image");
    HyocrWindow *win = screenshot_window();
    save_window(win, "zh-CN.png");
    app_test_destroy_window(win);
    win = history_window(history_zh, G_N_ELEMENTS(history_zh));
    save_window(win, "history-zh-CN.png");
    app_test_destroy_window(win);
    save_capture(region_zh, g_strv_length((char **)region_zh), "capture-result-zh-CN.png");
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    app_test_init(&argc, &argv);
    g_test_add_func("/app/screenshots/empty", test_empty);
    g_test_add_func("/app/screenshots/running", test_running);
    g_test_add_func("/app/screenshots/spotting", test_spotting);
    g_test_add_func("/app/screenshots/history", test_history);
    g_test_add_func("/app/screenshots/parsed", test_parsed);
    g_test_add_func("/app/screenshots/capture", test_capture);
    g_test_add_func("/app/screenshots/zh-CN", test_empty_zh_cn);
    return g_test_run();
}
