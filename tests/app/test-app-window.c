/* hyocr-gtk window end to end on the tiny test checkpoints: drops, paste,
 * presets, streaming against `hyocr run`, cancel, model problems, corrupt
 * images, memory refusal, the gauge, the spotting and JSON views, dialogs and
 * the command line. */
#include "app-test.h"
#include "document.h"
#include "error.h"
#include "gpu-check.h"
#include "hyocr-preferences-private.h"
#include "hyocr-task-picker.h"
#include "hyocr-build-config.h"
#include <glib/gstdio.h>
#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <locale.h>

/* A failure bound: a job here takes seconds, many times that under ASan on a busy machine. */
#define JOB_TIMEOUT_MS (5 * APP_TEST_WAIT_MS)

static void use_max_tokens(int n)
{
    g_settings_set_int(app_test_settings(), "max-new-tokens", n);
}

static GdkFileList *file_list(const char *first, ...)
{
    g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_object_unref);
    va_list ap;
    va_start(ap, first);
    for (const char *name = first; name; name = va_arg(ap, const char *)) {
        if (name[0] == '/') g_ptr_array_add(files, g_file_new_for_path(name));
        else g_ptr_array_add(files, app_test_image(name));
    }
    va_end(ap);
    return gdk_file_list_new_from_array((GFile **)files->pdata, files->len);
}

/* What a drag from another app does to the target: enter, then drop. */
static gboolean drop_value(HyocrWindow *win, const GValue *value)
{
    GtkDropTarget *target = hyocr_window_get_drop_target(win);
    GdkDragAction action = 0;
    g_signal_emit_by_name(target, "enter", 20.0, 20.0, &action);
    g_assert_cmpint(action, ==, GDK_ACTION_COPY);
    g_assert_true(hyocr_window_is_drop_hovered(win));
    gboolean ok = FALSE;
    g_signal_emit_by_name(target, "drop", value, 20.0, 20.0, &ok);
    g_assert_false(hyocr_window_is_drop_hovered(win));
    return ok;
}

static guint n_jobs(HyocrWindow *win)
{
    return g_list_model_get_n_items(hyocr_window_get_jobs(win));
}

/* ---- drops and paste ---- */

static void test_drop_files(void)
{
    app_test_reset_settings();
    use_max_tokens(48);
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "empty");
    g_autofree char *not_image = app_test_data("manifest.json", NULL);
    g_auto(GValue) v = G_VALUE_INIT;
    g_value_init(&v, GDK_TYPE_FILE_LIST);
    g_value_take_boxed(&v, file_list("big_420x300.png", not_image, "square_200.png", NULL));
    guint toasts = hyocr_window_get_n_toasts(win);
    g_assert_true(drop_value(win, &v));
    g_assert_cmpuint(n_jobs(win), ==, 2);
    g_assert_cmpuint(hyocr_window_get_n_toasts(win), ==, toasts + 1);
    g_assert_nonnull(strstr(hyocr_window_get_last_toast(win), "manifest.json"));
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "jobs");
    HyocrJob *a = app_test_job_at(win, 0), *b = app_test_job_at(win, 1);
    g_assert_cmpstr(hyocr_job_get_title(a), ==, "big_420x300.png");
    g_assert_cmpstr(hyocr_job_get_title(b), ==, "square_200.png");
    g_assert_true(hyocr_result_view_get_job(hyocr_window_get_result_view(win)) == a);
    app_test_wait_job(a, JOB_TIMEOUT_MS);
    app_test_wait_job(b, JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(a), ==, HYOCR_JOB_DONE);
    g_assert_cmpint(hyocr_job_get_state(b), ==, HYOCR_JOB_DONE);
    g_assert_cmpint(hyocr_job_get_n_tokens(a), >, 0);
    g_assert_nonnull(hyocr_job_get_preview(a));
    /* One at a time, in the order dropped. */
    g_assert_cmpfloat(hyocr_job_get_elapsed(a), >, 0);
    app_test_destroy_window(win);
}

static void copy_image(const char *name, const char *dir, const char *as)
{
    g_autofree char *src = app_test_data("images", name, NULL), *dst = g_build_filename(dir, as, NULL);
    g_autofree char *data = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(src, &data, &len, NULL));
    g_assert_true(g_file_set_contents(dst, data, (gssize)len, NULL));
}

/* The formats are the engine's (document.h), as for `hyocr run`: a dropped folder
 * adds its readable files by name, sorted, and says how many it skipped; a file
 * in no such format is refused with the formats hyocr reads; a GIF named .png
 * is read by the engine alone and fails with its word for it (gdk-pixbuf would
 * have read it). */
static void test_drop_folder(void)
{
    app_test_reset_settings();
    use_max_tokens(8);
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_autofree char *tmp = g_dir_make_tmp("hyocr-folder-XXXXXX", NULL);
    copy_image("tiny_40x30.png", tmp, "b.png");
    copy_image("square_200.png", tmp, "a.jpeg.png");
    static const char gif[] = "GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00"
                              ",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";
    g_autofree char *gif_path = g_build_filename(tmp, "c.gif", NULL);
    g_autofree char *notes = g_build_filename(tmp, "notes.txt", NULL);
    g_assert_true(g_file_set_contents(gif_path, gif, sizeof gif - 1, NULL));
    g_assert_true(g_file_set_contents(notes, "words", -1, NULL));

    g_auto(GValue) v = G_VALUE_INIT;
    g_value_init(&v, GDK_TYPE_FILE_LIST);
    g_value_take_boxed(&v, file_list(tmp, NULL));
    guint toasts = hyocr_window_get_n_toasts(win);
    g_assert_true(drop_value(win, &v));
    g_assert_cmpuint(n_jobs(win), ==, 2);
    g_assert_cmpstr(hyocr_job_get_title(app_test_job_at(win, 0)), ==, "a.jpeg.png");
    g_assert_cmpstr(hyocr_job_get_title(app_test_job_at(win, 1)), ==, "b.png");
    g_assert_cmpuint(hyocr_window_get_n_toasts(win), ==, toasts + 1);
    g_autofree char *base = g_path_get_basename(tmp);
    g_autofree char *want = g_strdup_printf("Skipped 2 files in “%s” that hyocr does not read", base);
    g_assert_cmpstr(hyocr_window_get_last_toast(win), ==, want);

    g_autoptr(GFile) gif_file = g_file_new_for_path(gif_path);
    g_assert_cmpuint(hyocr_window_add_files(win, &gif_file, 1), ==, 0);
    g_assert_cmpuint(n_jobs(win), ==, 2);
    g_autofree char *formats = hyocr_format_names();
    g_autofree char *refused = g_strdup_printf("“c.gif” is not an image or document hyocr reads (%s)", formats);
    g_assert_cmpstr(hyocr_window_get_last_toast(win), ==, refused);

    g_autofree char *disguised = g_build_filename(tmp, "gif.png", NULL);
    g_assert_true(g_file_set_contents(disguised, gif, sizeof gif - 1, NULL));
    g_autoptr(GFile) disguised_file = g_file_new_for_path(disguised);
    g_assert_cmpuint(hyocr_window_add_files(win, &disguised_file, 1), ==, 1);
    HyocrJob *job = app_test_job_at(win, 2);
    app_test_wait_job(job, JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_FAILED);
    g_assert_cmpint(hyocr_job_get_failure(job), ==, HYOCR_JOB_FAILURE_IMAGE);
    g_assert_nonnull(strstr(hyocr_job_get_message(job), "looks like a GIF image"));

    g_autofree char *empty = g_build_filename(tmp, "empty", NULL);
    g_assert_cmpint(g_mkdir(empty, 0700), ==, 0);
    g_autoptr(GFile) empty_file = g_file_new_for_path(empty);
    g_assert_cmpuint(hyocr_window_add_files(win, &empty_file, 1), ==, 0);
    g_autofree char *none = g_strdup_printf("“empty” holds no image or document hyocr reads (%s)", formats);
    g_assert_cmpstr(hyocr_window_get_last_toast(win), ==, none);

    for (guint i = 0; i < n_jobs(win); i++) app_test_wait_job(app_test_job_at(win, i), JOB_TIMEOUT_MS);
    app_test_destroy_window(win);
    const char *names[] = { "a.jpeg.png", "b.png", "c.gif", "notes.txt", "gif.png" };
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *p = g_build_filename(tmp, names[i], NULL);
        g_remove(p);
    }
    g_rmdir(empty);
    g_rmdir(tmp);
}

typedef struct {
    GString *appended;
    guint    n_signals;
    gboolean in_order;
    HyocrJob *job;
} StreamLog;

static void on_text_changed(HyocrJob *job, const char *appended, StreamLog *log)
{
    log->n_signals++;
    if (!appended) return;   /* the final clean-up, checked separately */
    g_string_append(log->appended, appended);
    /* Each piece extends what was shown: nothing lost, nothing reordered. */
    if (strcmp(hyocr_job_get_text(job), log->appended->str) != 0) log->in_order = FALSE;
}

static StreamLog *stream_log_new(void)
{
    StreamLog *log = g_new0(StreamLog, 1);
    log->appended = g_string_new(NULL);
    log->in_order = TRUE;
    return log;
}

static void stream_log_free(StreamLog *log)
{
    g_string_free(log->appended, TRUE);
    g_free(log);
}

static gboolean has_jobs(gpointer win)
{
    return n_jobs(win) > 0;
}

/* Connects the log to the newest job once it exists. */
static HyocrJob *watch_last_job(HyocrWindow *win, StreamLog *log)
{
    g_assert_true(app_test_wait(has_jobs, win, APP_TEST_WAIT_MS));
    HyocrJob *job = app_test_job_at(win, n_jobs(win) - 1);
    g_signal_connect(job, "text-changed", G_CALLBACK(on_text_changed), log);
    return job;
}

static void assert_matches_cli(HyocrJob *job, StreamLog *log, const char *ckpt, const char *image, const char *task,
                               int max_tokens)
{
    g_autofree char *streamed = NULL, *final_text = NULL;
    app_test_cli_run(ckpt, image, task, max_tokens, &streamed, &final_text);
    g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_DONE);
    g_assert_true(log->in_order);
    g_assert_cmpstr(log->appended->str, ==, streamed);
    g_assert_cmpstr(hyocr_job_get_text(job), ==, final_text);
}

static void test_drop_texture(void)
{
    app_test_reset_settings();
    use_max_tokens(64);
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_autofree char *path = app_test_data("images", "odd_137x91.png", NULL);
    g_autoptr(GdkTexture) tex = gdk_texture_new_from_filename(path, NULL);
    g_auto(GValue) v = G_VALUE_INIT;
    g_value_init(&v, GDK_TYPE_TEXTURE);
    g_value_set_object(&v, tex);
    StreamLog *log = stream_log_new();
    g_assert_true(drop_value(win, &v));
    HyocrJob *job = watch_last_job(win, log);
    g_assert_cmpstr(hyocr_job_get_title(job), ==, "Dropped image");
    app_test_wait_job(job, JOB_TIMEOUT_MS);
    /* Same pixels as the file, so the same answer as the CLI on the file. */
    assert_matches_cli(job, log, "ckpt-flat", "odd_137x91.png", "recognize", 64);
    stream_log_free(log);
    app_test_destroy_window(win);
}

static gboolean n_jobs_at_least(gpointer data)
{
    gpointer *d = data;
    return n_jobs(d[0]) >= GPOINTER_TO_UINT(d[1]);
}

static gboolean n_toasts_at_least(gpointer data)
{
    gpointer *d = data;
    return hyocr_window_get_n_toasts(d[0]) >= GPOINTER_TO_UINT(d[1]);
}

static void paste_and_wait(HyocrWindow *win, guint want_jobs)
{
    gtk_widget_activate_action(GTK_WIDGET(win), "win.paste", NULL);
    gpointer d[2] = { win, GUINT_TO_POINTER(want_jobs) };
    app_test_wait(n_jobs_at_least, d, APP_TEST_WAIT_MS);
}

static void test_paste(void)
{
    app_test_reset_settings();
    use_max_tokens(32);
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    GdkClipboard *clipboard = gtk_widget_get_clipboard(GTK_WIDGET(win));
    g_autofree char *path = app_test_data("images", "square_200.png", NULL);
    g_autoptr(GdkTexture) tex = gdk_texture_new_from_filename(path, NULL);
    gdk_clipboard_set_texture(clipboard, tex);
    paste_and_wait(win, 1);
    g_assert_cmpuint(n_jobs(win), ==, 1);
    HyocrJob *pasted = app_test_job_at(win, 0);
    g_assert_cmpstr(hyocr_job_get_title(pasted), ==, "Pasted image");
    app_test_wait_job(pasted, JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(pasted), ==, HYOCR_JOB_DONE);

    /* Files copied in a file manager. */
    GdkFileList *list = file_list("tiny_40x30.png", NULL);
    gdk_clipboard_set(clipboard, GDK_TYPE_FILE_LIST, list);
    g_boxed_free(GDK_TYPE_FILE_LIST, list);
    paste_and_wait(win, 2);
    g_assert_cmpuint(n_jobs(win), ==, 2);
    g_assert_cmpstr(hyocr_job_get_title(app_test_job_at(win, 1)), ==, "tiny_40x30.png");
    app_test_wait_job(app_test_job_at(win, 1), JOB_TIMEOUT_MS);

    /* Text is not an image: a toast, no job. */
    gdk_clipboard_set_text(clipboard, "just words");
    guint toasts = hyocr_window_get_n_toasts(win);
    gtk_widget_activate_action(GTK_WIDGET(win), "win.paste", NULL);
    gpointer t[2] = { win, GUINT_TO_POINTER(toasts + 1) };
    g_assert_true(app_test_wait(n_toasts_at_least, t, APP_TEST_WAIT_MS));
    g_assert_cmpuint(n_jobs(win), ==, 2);
    g_assert_cmpuint(hyocr_window_get_n_toasts(win), ==, toasts + 1);
    g_assert_nonnull(strstr(hyocr_window_get_last_toast(win), "no image"));
    app_test_destroy_window(win);
}

/* ---- presets ---- */

static gboolean has_prompt(gpointer job)
{
    return hyocr_job_get_prompt(job) != NULL || hyocr_job_is_finished(job);
}

static char *prompt_for(HyocrWindow *win, const char *image)
{
    g_autoptr(GFile) file = app_test_image(image);
    guint before = n_jobs(win);
    if (hyocr_window_add_files(win, &file, 1) != 1) return NULL;
    g_assert_cmpuint(n_jobs(win), ==, before + 1);
    HyocrJob *job = app_test_job_at(win, before);
    g_assert_true(app_test_wait(has_prompt, job, JOB_TIMEOUT_MS));
    return g_strdup(hyocr_job_get_prompt(job));
}

static char *engine_prompt(hyocr_task task, const char *const *fields, const char *custom)
{
    g_autofree char *dir = app_test_data("ckpt-flat", NULL);
    g_autoptr(hyocr_config) cfg = hyocr_config_load(dir, NULL);
    return hyocr_task_prompt(task, cfg->version, fields, custom, NULL);
}

static void test_preset_changes_prompt(void)
{
    app_test_reset_settings();
    use_max_tokens(4);
    GSettings *s = app_test_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_autofree char *recognize = prompt_for(win, "tiny_40x30.png");
    g_autofree char *want_recognize = engine_prompt(HYOCR_TASK_RECOGNIZE, NULL, NULL);
    g_assert_cmpstr(recognize, ==, want_recognize);

    /* Ctrl+2 is win.preset::spotting; it changes the remembered preset. */
    gtk_widget_activate_action(GTK_WIDGET(win), "win.preset", "s", "spotting");
    g_autofree char *preset = g_settings_get_string(s, "preset");
    g_assert_cmpstr(preset, ==, "spotting");
    g_autofree char *spotting = prompt_for(win, "tiny_40x30.png");
    g_autofree char *want_spotting = engine_prompt(HYOCR_TASK_SPOTTING, NULL, NULL);
    g_assert_cmpstr(spotting, ==, want_spotting);
    g_assert_cmpstr(spotting, !=, recognize);

    /* The parse tasks the CLI has: Ctrl+4, 5 and 6, the engine's official prompts. */
    static const struct { const char *nick; hyocr_task task; } parse[] = {
        { "parse-table", HYOCR_TASK_PARSE_TABLE },
        { "parse-formula", HYOCR_TASK_PARSE_FORMULA },
        { "parse-chart", HYOCR_TASK_PARSE_CHART },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(parse); i++) {
        gtk_widget_activate_action(GTK_WIDGET(win), "win.preset", "s", parse[i].nick);
        g_autofree char *got = prompt_for(win, "tiny_40x30.png");
        g_autofree char *want = engine_prompt(parse[i].task, NULL, NULL);
        g_assert_cmpstr(got, ==, want);
    }
    /* the picker lists every preset under its label, in the enum's order */
    GtkDropDown *dd = NULL;
    for (GtkWidget *w = GTK_WIDGET(win); w;) {   /* depth-first to the picker's first drop-down */
        if (GTK_IS_DROP_DOWN(w) && gtk_widget_get_ancestor(w, HYOCR_TYPE_TASK_PICKER)) {
            dd = GTK_DROP_DOWN(w);
            break;
        }
        GtkWidget *next = gtk_widget_get_first_child(w);
        while (!next && w) {
            next = gtk_widget_get_next_sibling(w);
            if (!next) w = gtk_widget_get_parent(w);
        }
        w = next;
    }
    g_assert_nonnull(dd);
    GListModel *labels = gtk_drop_down_get_model(dd);
    g_assert_cmpuint(g_list_model_get_n_items(labels), ==, HYOCR_N_PRESETS);
    for (guint i = 0; i < HYOCR_N_PRESETS; i++)
        g_assert_cmpstr(gtk_string_list_get_string(GTK_STRING_LIST(labels), i), ==, hyocr_preset_get_label((HyocrPreset)i));
    g_assert_cmpstr(gtk_string_list_get_string(GTK_STRING_LIST(labels), HYOCR_PRESET_PARSE_CHART), ==, "Parse Chart");
    g_assert_cmpuint(gtk_drop_down_get_selected(dd), ==, HYOCR_PRESET_PARSE_CHART);

    g_settings_set_string(s, "preset", "translate");
    g_settings_set_string(s, "translate-target", "zh");
    g_autofree char *zh = prompt_for(win, "tiny_40x30.png");
    g_autofree char *want_zh = engine_prompt(HYOCR_TASK_TRANSLATE_ZH, NULL, NULL);
    g_assert_cmpstr(zh, ==, want_zh);
    g_settings_set_string(s, "translate-target", "en");
    g_autofree char *en = prompt_for(win, "tiny_40x30.png");
    g_assert_cmpstr(en, !=, zh);

    /* Field names typed in the picker reach the prompt. */
    g_settings_set_string(s, "preset", "extract-fields");
    guint toasts = hyocr_window_get_n_toasts(win);
    g_assert_null(prompt_for(win, "tiny_40x30.png"));   /* none typed: refused with a toast */
    g_assert_cmpuint(hyocr_window_get_n_toasts(win), ==, toasts + 1);
    const char *keys[] = { "invoice number", "total", NULL };
    g_settings_set_strv(s, "fields", keys);
    g_autofree char *fields = prompt_for(win, "tiny_40x30.png");
    g_autofree char *want_fields = engine_prompt(HYOCR_TASK_EXTRACT_FIELDS, keys, NULL);
    g_assert_cmpstr(fields, ==, want_fields);
    g_assert_nonnull(strstr(fields, "invoice number"));

    g_settings_set_string(s, "preset", "custom");
    g_settings_set_string(s, "custom-prompt", "Read the licence plate.");
    g_autofree char *custom = prompt_for(win, "tiny_40x30.png");
    g_assert_cmpstr(custom, ==, "Read the licence plate.");
    for (guint i = 0; i < n_jobs(win); i++) app_test_wait_job(app_test_job_at(win, i), JOB_TIMEOUT_MS);
    app_test_destroy_window(win);
}

/* ---- streaming ---- */

static void stream_case(const char *ckpt, const char *image, const char *preset, const char *task)
{
    app_test_reset_settings();
    use_max_tokens(200);
    g_settings_set_string(app_test_settings(), "preset", preset);
    HyocrWindow *win = app_test_window(ckpt, TRUE);
    g_autoptr(GFile) file = app_test_image(image);
    StreamLog *log = stream_log_new();
    g_assert_cmpuint(hyocr_window_add_files(win, &file, 1), ==, 1);
    HyocrJob *job = watch_last_job(win, log);
    app_test_wait_job(job, JOB_TIMEOUT_MS);
    assert_matches_cli(job, log, ckpt, image, task, 200);
    /* Coalesced: fewer flushes than tokens once there are many tokens. */
    if (hyocr_job_get_n_tokens(job) > 100) g_assert_cmpuint(hyocr_job_get_n_updates(job), <, hyocr_job_get_n_tokens(job));
    g_test_message("%s %s: %d tokens, %u updates, %u text signals", ckpt, image, hyocr_job_get_n_tokens(job),
                   hyocr_job_get_n_updates(job), log->n_signals);
    stream_log_free(log);
    app_test_destroy_window(win);
}

static void test_stream_matches_cli(void)
{
    stream_case("ckpt-flat", "big_420x300.png", "spotting", "spotting");
    stream_case("ckpt-nested", "square_200.png", "parse-document", "parse_document");
    stream_case("ckpt-nested", "odd_137x91.png", "recognize", "recognize");
}

static gboolean worker_failed(gpointer win)
{
    return hyocr_worker_get_state(hyocr_window_get_worker(win)) == HYOCR_WORKER_FAILED;
}

/* Pages queued together decode together (continuous batching), each streaming
 * exactly what `hyocr run` prints for it alone, and a long one (3000 tokens)
 * decoding on after the others end. They are queued while no model is loaded,
 * so the worker gets all four at once, whatever the threads' timing; the model
 * then comes, as after a first-run download. */
static void test_batch_matches_cli(void)
{
    app_test_reset_settings();
    use_max_tokens(200);
    g_settings_set_string(app_test_settings(), "preset", "recognize");
    HyocrWindow *win = app_test_window("/nonexistent/hyocr/HunyuanOCR", FALSE);
    g_assert_true(app_test_wait(worker_failed, win, APP_TEST_WAIT_MS));
    HyocrWorker *worker = hyocr_window_get_worker(win);
    hyocr_worker_set_max_batch(worker, 4);
    g_autoptr(HyocrJobOptions) opts = hyocr_job_options_new_from_settings(app_test_settings(), NULL);
    opts->max_new_tokens = 3000;
    opts->ignore_eos = TRUE;
    g_autoptr(GFile) first = app_test_image("gray_120x90.png");
    g_autoptr(HyocrJob) running = hyocr_job_new_for_file(first, opts);
    hyocr_window_add_job(win, running);
    static const char *const images[] = { "odd_137x91.png", "square_200.png", "big_420x300.png" };
    StreamLog *logs[3];
    HyocrJob *jobs[3];
    for (int i = 0; i < 3; i++) {
        g_autoptr(GFile) file = app_test_image(images[i]);
        logs[i] = stream_log_new();
        g_assert_cmpuint(hyocr_window_add_files(win, &file, 1), ==, 1);
        jobs[i] = watch_last_job(win, logs[i]);
    }
    g_autofree char *model = app_test_data("ckpt-nested", NULL);
    g_settings_set_string(app_test_settings(), "model-folder", model);
    for (int i = 0; i < 3; i++) app_test_wait_job(jobs[i], JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_worker_get_largest_batch(worker), ==, 4);
    for (int i = 0; i < 3; i++) {
        assert_matches_cli(jobs[i], logs[i], "ckpt-nested", images[i], "recognize", 200);
        stream_log_free(logs[i]);
    }
    app_test_wait_job(running, JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(running), ==, HYOCR_JOB_DONE);
    app_test_destroy_window(win);
}

/* ---- cancel ---- */

static HyocrJob *long_job(HyocrWindow *win, const char *image, int tokens)
{
    g_autoptr(HyocrJobOptions) opts = hyocr_job_options_new_from_settings(app_test_settings(), NULL);
    opts->max_new_tokens = tokens;
    opts->ignore_eos = TRUE;
    g_autoptr(GFile) file = app_test_image(image);
    HyocrJob *job = hyocr_job_new_for_file(file, opts);
    hyocr_window_add_job(win, job);
    return job;
}

static gboolean writing_many(gpointer job)
{
    return hyocr_job_get_n_tokens(job) >= 200 || hyocr_job_is_finished(job);
}

/* A page added while another is decoding joins it: the worker submits it to the
 * engine at once, and it decodes in the same steps (the engine's batch size is 2
 * while both run, 1 before), streaming what `hyocr run` prints for it alone. The
 * engine waits at its next token until the page is submitted, so the running
 * job's ~99800 remaining steps cannot end before the page's 200 have run; it is
 * cancelled as soon as the page is done, before the (slow) comparison with the
 * CLI: on a loaded machine it once ran out its 30000 tokens during that comparison
 * and ended DONE instead of CANCELLED. */
static void test_join_running(void)
{
    app_test_reset_settings();
    use_max_tokens(200);
    g_settings_set_string(app_test_settings(), "preset", "recognize");
    HyocrWindow *win = app_test_window("ckpt-nested", TRUE);
    HyocrWorker *worker = hyocr_window_get_worker(win);
    hyocr_worker_set_max_batch(worker, 4);
    g_autoptr(HyocrJob) running = long_job(win, "gray_120x90.png", 100000);
    g_assert_true(app_test_wait(writing_many, running, JOB_TIMEOUT_MS));
    g_assert_cmpint(hyocr_job_get_state(running), ==, HYOCR_JOB_WRITING);
    g_assert_cmpint(hyocr_worker_get_largest_batch(worker), ==, 1);

    g_autoptr(GFile) file = app_test_image("odd_137x91.png");
    StreamLog *log = stream_log_new();
    hyocr_worker_hold_until_submit(worker);
    g_assert_cmpuint(hyocr_window_add_files(win, &file, 1), ==, 1);
    HyocrJob *added = watch_last_job(win, log);
    app_test_wait_job(added, JOB_TIMEOUT_MS);
    g_assert_false(hyocr_job_is_finished(running));   /* it was still decoding all along */
    hyocr_job_cancel(running);
    app_test_wait_job(running, APP_TEST_WAIT_MS);
    g_assert_cmpint(hyocr_job_get_state(running), ==, HYOCR_JOB_CANCELLED);
    g_assert_cmpint(hyocr_worker_get_largest_batch(worker), ==, 2);
    assert_matches_cli(added, log, "ckpt-nested", "odd_137x91.png", "recognize", 200);
    stream_log_free(log);
    app_test_destroy_window(win);
}

static void test_cancel(void)
{
    app_test_reset_settings();
    use_max_tokens(16);
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_autoptr(HyocrJob) running = long_job(win, "big_420x300.png", 30000);
    g_autoptr(GFile) file = app_test_image("tiny_40x30.png");
    hyocr_window_add_files(win, &file, 1);
    HyocrJob *after = app_test_job_at(win, 1);
    g_assert_cmpint(hyocr_job_get_state(after), ==, HYOCR_JOB_QUEUED);
    g_assert_true(app_test_wait(writing_many, running, JOB_TIMEOUT_MS));
    g_assert_cmpint(hyocr_job_get_state(running), ==, HYOCR_JOB_WRITING);

    hyocr_window_select_job(win, running);
    gint64 t0 = g_get_monotonic_time();
    gtk_widget_activate_action(GTK_WIDGET(win), "win.cancel-job", NULL);
    int live = hyocr_job_get_live_tokens(running);
    app_test_wait_job(running, APP_TEST_WAIT_MS);
    double ms = (double)(g_get_monotonic_time() - t0) / 1000.0;
    g_assert_cmpint(hyocr_job_get_state(running), ==, HYOCR_JOB_CANCELLED);
    /* Within one decode step: at most the token being computed at the time. */
    g_assert_cmpint(hyocr_job_get_n_tokens(running), <=, live + 1);
    g_assert_cmpint(hyocr_job_get_n_tokens(running), <, 30000);
    g_assert_nonnull(strstr(hyocr_job_get_message(running), "Cancelled after"));
    g_test_message("cancelled at %d tokens, ended at %d, %.1f ms", live, hyocr_job_get_n_tokens(running), ms);

    /* The queue goes on. */
    app_test_wait_job(after, JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(after), ==, HYOCR_JOB_DONE);

    /* A queued job is cancelled at once and never runs: the one queued after it
     * ends first (jobs are taken in order). */
    g_autoptr(HyocrJob) blocker = long_job(win, "big_420x300.png", 30000);
    g_autoptr(HyocrJob) queued = long_job(win, "tiny_40x30.png", 50);
    g_autoptr(HyocrJob) next = long_job(win, "tiny_40x30.png", 4);
    hyocr_job_cancel(queued);
    g_assert_cmpint(hyocr_job_get_state(queued), ==, HYOCR_JOB_CANCELLED);
    hyocr_job_cancel(blocker);
    app_test_wait_job(blocker, APP_TEST_WAIT_MS);
    app_test_wait_job(next, JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(next), ==, HYOCR_JOB_DONE);
    g_assert_cmpint(hyocr_job_get_state(queued), ==, HYOCR_JOB_CANCELLED);
    g_assert_cmpint(hyocr_job_get_n_tokens(queued), ==, 0);
    g_assert_null(hyocr_job_get_prompt(queued));   /* the worker never prepared it */

    /* Removing a running job from the queue cancels it. */
    g_autoptr(HyocrJob) removed = long_job(win, "big_420x300.png", 30000);
    g_assert_true(app_test_wait(writing_many, removed, JOB_TIMEOUT_MS));
    gtk_widget_activate_action(GTK_WIDGET(win), "win.remove-job", "u", hyocr_job_get_id(removed));
    g_assert_null(hyocr_window_find_job(win, hyocr_job_get_id(removed), NULL));
    app_test_wait_job(removed, APP_TEST_WAIT_MS);
    g_assert_cmpint(hyocr_job_get_state(removed), ==, HYOCR_JOB_CANCELLED);
    app_test_destroy_window(win);
}

/* ---- model problems ---- */

/* Switches the model folder and waits for the (debounced) reload to end. */
static void set_model(HyocrWindow *win, const char *dir, HyocrWorkerState expect)
{
    g_settings_set_string(app_test_settings(), "model-folder", dir);
    app_test_wait_worker(win, HYOCR_WORKER_LOADING);
    app_test_wait_worker(win, expect);
}

static char *copy_checkpoint(const char *skip, const char *replace_name, const char *replace_text)
{
    g_autofree char *src = app_test_data("ckpt-flat", NULL);
    char *dst = g_dir_make_tmp("hyocr-model-XXXXXX", NULL);
    g_autoptr(GDir) dir = g_dir_open(src, 0, NULL);
    const char *name;
    while ((name = g_dir_read_name(dir))) {
        if (skip && g_str_equal(name, skip)) continue;
        g_autofree char *from = g_build_filename(src, name, NULL), *to = g_build_filename(dst, name, NULL);
        if (replace_name && g_str_equal(name, replace_name)) g_file_set_contents(to, replace_text, -1, NULL);
        else g_assert_cmpint(symlink(from, to), ==, 0);
    }
    return dst;
}

static void remove_tree(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        g_remove(p);
    }
    g_rmdir(dir);
}

static void test_broken_model(void)
{
    app_test_reset_settings();
    use_max_tokens(16);
    HyocrWindow *win = app_test_window("/nonexistent/hyocr/HunyuanOCR", FALSE);
    app_test_wait_worker(win, HYOCR_WORKER_FAILED);
    HyocrModelStatus *status = HYOCR_MODEL_STATUS(hyocr_window_get_model_status(win));
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "model");
    g_assert_cmpint(hyocr_model_status_get_problem(status), ==, HYOCR_MODEL_PROBLEM_MISSING);
    g_assert_cmpstr(hyocr_model_status_get_title(status), ==, "No Model Found");
    g_assert_nonnull(strstr(hyocr_model_status_get_details(status), "/nonexistent/hyocr/HunyuanOCR"));
    g_assert_cmpstr(hyocr_vram_gauge_get_summary(hyocr_window_get_gauge(win)), ==, "No model");
    g_assert_nonnull(hyocr_model_status_get_download_area(status));
    /* With the downloader built, the download offer is shown (test-app-download walks it). */
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(hyocr_model_status_get_download_area(status))) ==
                  (hyocr_window_get_download_panel(win) != NULL));

    g_autofree char *incomplete = copy_checkpoint("tokenizer.json", NULL, NULL);
    set_model(win, incomplete, HYOCR_WORKER_FAILED);
    g_assert_cmpint(hyocr_model_status_get_problem(status), ==, HYOCR_MODEL_PROBLEM_INCOMPLETE);
    g_assert_nonnull(strstr(hyocr_model_status_get_details(status), "tokenizer.json"));

    g_autofree char *broken = copy_checkpoint(NULL, "config.json", "{ \"hidden_size\": ");
    set_model(win, broken, HYOCR_WORKER_FAILED);
    g_assert_cmpint(hyocr_model_status_get_problem(status), ==, HYOCR_MODEL_PROBLEM_BROKEN);
    g_assert_nonnull(strstr(hyocr_model_status_get_details(status), "config.json"));
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "model");

    /* An image dropped meanwhile waits for a model, then runs. */
    g_autoptr(GFile) file = app_test_image("tiny_40x30.png");
    g_assert_cmpuint(hyocr_window_add_files(win, &file, 1), ==, 1);
    g_assert_nonnull(strstr(hyocr_window_get_last_toast(win), "waits"));
    HyocrJob *job = app_test_job_at(win, 0);
    app_test_drain();   /* the worker has no engine: nothing it could post ran the job */
    g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_QUEUED);
    g_autofree char *good = app_test_data("ckpt-flat", NULL);
    set_model(win, good, HYOCR_WORKER_READY);
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "jobs");
    app_test_wait_job(job, JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_DONE);
    app_test_destroy_window(win);
    remove_tree(incomplete);
    remove_tree(broken);
}

/* This build has no CUDA: asking for the GPU is a device problem, shown on
 * the model page with the engine's message; back on the CPU all is well. */
static void test_device_preference(void)
{
    app_test_reset_settings();
    use_max_tokens(4);
    /* the F32/F16 export: its 1.6 MiB of weights (fp32 on the CPU) are over the smallest
     * limit the preference takes, 1 MiB (ckpt-flat's bf16 matrices take 832 KiB) */
    HyocrWindow *win = app_test_window("ckpt-nested", TRUE);
    g_assert_true(hyocr_worker_is_cpu(hyocr_window_get_worker(win)));
    g_autoptr(GFile) file = app_test_image("tiny_40x30.png");
    hyocr_window_add_files(win, &file, 1);
    app_test_wait_job(app_test_job_at(win, 0), JOB_TIMEOUT_MS);
    g_assert_null(hyocr_window_get_problem(win));
    g_settings_set_string(app_test_settings(), "device", "gpu");
    app_test_wait_worker(win, HYOCR_WORKER_LOADING);
    app_test_wait_worker(win, HYOCR_WORKER_FAILED);
    HyocrModelStatus *status = HYOCR_MODEL_STATUS(hyocr_window_get_model_status(win));
    const GError *error = hyocr_worker_get_error(hyocr_window_get_worker(win));
    if (error && g_error_matches(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND)) {
        /* The model is fine: the queue stays, a banner names the cause and the setting. */
        g_assert_cmpint(hyocr_model_status_get_problem(status), ==, HYOCR_MODEL_PROBLEM_DEVICE);
        g_assert_cmpstr(hyocr_window_get_page(win), ==, "jobs");
        const char *problem = hyocr_window_get_problem(win);
        g_test_message("%s", problem);
        g_assert_nonnull(problem);
        g_assert_nonnull(strstr(problem, "GPU"));
        g_assert_nonnull(strstr(problem, "Preferences"));
        g_assert_null(strstr(problem, "runs on the CPU"));
        g_assert_null(strstr(problem, "download"));
    }
    g_settings_set_string(app_test_settings(), "device", "cpu");
    app_test_wait_worker(win, HYOCR_WORKER_LOADING);
    app_test_wait_worker(win, HYOCR_WORKER_READY);
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "jobs");
    g_assert_null(hyocr_window_get_problem(win));

    /* A memory limit below the weights: the same, with the limit that would do. */
    g_settings_set_int(app_test_settings(), "gpu-memory-limit", 1);
    app_test_wait_worker(win, HYOCR_WORKER_LOADING);
    app_test_wait_worker(win, HYOCR_WORKER_FAILED);
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "jobs");
    const char *limit = hyocr_window_get_problem(win);
    g_test_message("%s", limit);
    g_assert_nonnull(limit);
    g_assert_nonnull(strstr(limit, "Memory limit"));
    g_assert_nonnull(strstr(limit, "Preferences"));
    g_settings_set_int(app_test_settings(), "gpu-memory-limit", 0);
    app_test_wait_worker(win, HYOCR_WORKER_LOADING);
    app_test_wait_worker(win, HYOCR_WORKER_READY);
    app_test_destroy_window(win);
}

static void test_corrupt_image(void)
{
    app_test_reset_settings();
    use_max_tokens(16);
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_autofree char *tmp = g_dir_make_tmp("hyocr-img-XXXXXX", NULL);
    g_autofree char *bad = g_build_filename(tmp, "corrupt.png", NULL);
    static const char bytes[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10\x08\x02\0\0\0garbage";
    g_assert_true(g_file_set_contents(bad, bytes, sizeof bytes - 1, NULL));
    g_autoptr(GFile) bad_file = g_file_new_for_path(bad);
    hyocr_window_add_files(win, &bad_file, 1);
    HyocrJob *job = app_test_job_at(win, 0);
    app_test_wait_job(job, JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_FAILED);
    g_assert_nonnull(strstr(hyocr_job_get_message(job), "corrupt.png"));
    /* The toast comes with the state change that ended the job. */
    g_assert_nonnull(strstr(hyocr_window_get_last_toast(win), "corrupt.png"));
    g_assert_cmpstr(hyocr_result_view_get_visible_page(hyocr_window_get_result_view(win)), ==, "message");
    g_assert_cmpint(hyocr_job_get_failure(job), ==, HYOCR_JOB_FAILURE_IMAGE);
    g_assert_cmpstr(hyocr_result_view_get_message_title(hyocr_window_get_result_view(win)), ==,
                    "This Image Could Not Be Read");

    g_autoptr(GFile) good = app_test_image("tiny_40x30.png");
    hyocr_window_add_files(win, &good, 1);
    app_test_wait_job(app_test_job_at(win, 1), JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(app_test_job_at(win, 1)), ==, HYOCR_JOB_DONE);
    app_test_destroy_window(win);
    g_remove(bad);
    g_rmdir(tmp);
}

/* ---- memory ---- */

static void test_memory_refusal(void)
{
    app_test_reset_settings();
    GSettings *s = app_test_settings();
    g_settings_set_int(s, "gpu-memory-limit", 8);   /* MiB: the tiny model's weights fit, a long answer's cache not */
    use_max_tokens(32768);
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_autoptr(GFile) file = app_test_image("big_420x300.png");
    hyocr_window_add_files(win, &file, 1);
    HyocrJob *job = app_test_job_at(win, 0);
    app_test_wait_job(job, JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_FAILED);
    const char *msg = hyocr_job_get_message(job);
    g_test_message("%s", msg);
    g_assert_nonnull(strstr(msg, "memory limit"));
    g_assert_nonnull(strstr(msg, "Maximum new tokens"));
    g_assert_nonnull(strstr(msg, "420 × 300"));
    g_assert_cmpint(hyocr_job_get_n_tokens(job), ==, 0);
    /* Titled by its cause, not as an image that could not be read. */
    g_assert_cmpint(hyocr_job_get_failure(job), ==, HYOCR_JOB_FAILURE_MEMORY);
    g_assert_cmpstr(hyocr_result_view_get_message_title(hyocr_window_get_result_view(win)), ==,
                    "Not Enough Memory for This Image");
    /* What the message says to change works. */
    use_max_tokens(32);
    hyocr_window_add_files(win, &file, 1);
    app_test_wait_job(app_test_job_at(win, 1), JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(app_test_job_at(win, 1)), ==, HYOCR_JOB_DONE);
    app_test_destroy_window(win);
}

/* ---- run again ---- */

/* A finished job runs again with its own task or the one picked now; a job
 * refused for memory runs once the limit allows it (Retry Failed Jobs); rows
 * tell files of the same name apart by their folder and size. */
static void test_run_again(void)
{
    app_test_reset_settings();
    use_max_tokens(8);
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_autofree char *tmp = g_dir_make_tmp("hyocr-again-XXXXXX", NULL);
    g_autofree char *a_dir = g_build_filename(tmp, "a", NULL), *b_dir = g_build_filename(tmp, "b", NULL);
    g_mkdir(a_dir, 0755);
    g_mkdir(b_dir, 0755);
    g_autofree char *src = app_test_data("images", "tiny_40x30.png", NULL), *src2 = app_test_data("images", "square_200.png", NULL);
    g_autofree char *a = g_build_filename(a_dir, "scan.png", NULL), *b = g_build_filename(b_dir, "scan.png", NULL);
    g_autofree char *bytes = NULL, *bytes2 = NULL;
    gsize len = 0, len2 = 0;
    g_assert_true(g_file_get_contents(src, &bytes, &len, NULL) && g_file_set_contents(a, bytes, (gssize)len, NULL));
    g_assert_true(g_file_get_contents(src2, &bytes2, &len2, NULL) && g_file_set_contents(b, bytes2, (gssize)len2, NULL));
    g_autoptr(GFile) fa = g_file_new_for_path(a), fb = g_file_new_for_path(b);
    GFile *files[2] = { fa, fb };
    g_assert_cmpuint(hyocr_window_add_files(win, files, 2), ==, 2);
    /* Same names, told apart. */
    const char *wa = hyocr_job_row_get_where(HYOCR_JOB_ROW(gtk_list_box_get_row_at_index(win->job_list, 0)));
    const char *wb = hyocr_job_row_get_where(HYOCR_JOB_ROW(gtk_list_box_get_row_at_index(win->job_list, 1)));
    g_test_message("rows: “%s”, “%s”", wa, wb);
    g_assert_cmpstr(wa, !=, wb);
    g_assert_nonnull(strstr(wa, "/a · "));
    g_assert_nonnull(strstr(wb, "/b · "));
    g_autofree char *size_b = g_format_size(len2);
    g_assert_nonnull(strstr(wb, size_b));
    HyocrJob *first = app_test_job_at(win, 0);
    app_test_wait_job(first, JOB_TIMEOUT_MS);
    app_test_wait_job(app_test_job_at(win, 1), JOB_TIMEOUT_MS);

    /* Run again, same task: the same prompt and image, a new job. */
    hyocr_window_select_job(win, first);
    g_assert_true(gtk_widget_get_visible(hyocr_result_view_get_button(hyocr_window_get_result_view(win), "again")));
    gtk_widget_activate_action(GTK_WIDGET(win), "win.run-again", "s", "same");
    g_assert_cmpuint(n_jobs(win), ==, 3);
    HyocrJob *again = app_test_job_at(win, 2);
    g_assert_true(hyocr_window_get_selected_job(win) == again);
    g_assert_true(g_file_equal(hyocr_job_get_file(again), fa));
    app_test_wait_job(again, JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(again), ==, HYOCR_JOB_DONE);
    g_assert_cmpstr(hyocr_job_get_prompt(again), ==, hyocr_job_get_prompt(first));
    g_assert_cmpstr(hyocr_job_get_text(again), ==, hyocr_job_get_text(first));
    /* … and with the task picked since. */
    gtk_widget_activate_action(GTK_WIDGET(win), "win.preset", "s", "spotting");
    gtk_widget_activate_action(GTK_WIDGET(win), "win.run-again", "s", "current");
    HyocrJob *spot = app_test_job_at(win, 3);
    g_assert_cmpint(hyocr_job_get_options(spot)->preset, ==, HYOCR_PRESET_SPOTTING);
    app_test_wait_job(spot, JOB_TIMEOUT_MS);
    g_autofree char *want = engine_prompt(HYOCR_TASK_SPOTTING, NULL, NULL);
    g_assert_cmpstr(hyocr_job_get_prompt(spot), ==, want);
    app_test_destroy_window(win);

    /* Refused for memory, then the limit is raised: Retry Failed Jobs runs it in its place. */
    app_test_reset_settings();
    use_max_tokens(32768);
    g_settings_set_int(app_test_settings(), "gpu-memory-limit", 8);
    win = app_test_window("ckpt-flat", TRUE);
    g_autoptr(GFile) big = app_test_image("big_420x300.png");
    hyocr_window_add_files(win, &big, 1);
    app_test_wait_job(app_test_job_at(win, 0), JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(app_test_job_at(win, 0)), ==, HYOCR_JOB_FAILED);
    g_settings_set_int(app_test_settings(), "gpu-memory-limit", 0);
    app_test_wait_worker(win, HYOCR_WORKER_LOADING);
    app_test_wait_worker(win, HYOCR_WORKER_READY);
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(win), "win.retry-failed", NULL));
    g_assert_cmpuint(n_jobs(win), ==, 1);
    HyocrJob *retried = app_test_job_at(win, 0);
    g_assert_cmpint(hyocr_job_get_options(retried)->max_new_tokens, ==, 32768);
    g_assert_true(app_test_wait(writing_many, retried, JOB_TIMEOUT_MS));   /* past the memory check, writing */
    g_assert_cmpint(hyocr_job_get_state(retried), ==, HYOCR_JOB_WRITING);
    hyocr_job_cancel(retried);   /* 32768 tokens would take a while */
    app_test_wait_job(retried, JOB_TIMEOUT_MS);
    app_test_destroy_window(win);
    g_remove(a);
    g_remove(b);
    g_rmdir(a_dir);
    g_rmdir(b_dir);
    g_rmdir(tmp);
}

/* ---- gauge ---- */

/* The gauge's next update after the wait began, and what it showed then. */
typedef struct {
    HyocrVramGauge *gauge;
    HyocrJob       *job;
    guint           after;
    int64_t         kv;
    int             tokens;   /* the job's, read just after the gauge read its figures */
} GaugeWait;

static gboolean gauge_updated(gpointer data)
{
    GaugeWait *w = data;
    if (hyocr_vram_gauge_get_n_updates(w->gauge) == w->after) return FALSE;
    w->kv = hyocr_vram_gauge_get_figures(w->gauge)->kv_used;
    w->tokens = w->job ? hyocr_job_get_live_tokens(w->job) : 0;
    return TRUE;
}

static GaugeWait next_gauge_update(HyocrVramGauge *gauge, HyocrJob *job)
{
    GaugeWait w = { gauge, job, hyocr_vram_gauge_get_n_updates(gauge) };
    g_assert_true(app_test_wait(gauge_updated, &w, APP_TEST_WAIT_MS));
    return w;
}

typedef struct {
    HyocrJob *job;
    int       tokens;
} TokenWait;

static gboolean tokens_reached(gpointer data)
{
    TokenWait *w = data;
    return hyocr_job_get_live_tokens(w->job) >= w->tokens || hyocr_job_is_finished(w->job);
}

/* This process's resident memory, as the kernel counts it. */
static int64_t test_resident(void)
{
    g_autofree char *statm = NULL;
    g_assert_true(g_file_get_contents("/proc/self/statm", &statm, NULL, NULL));
    long long size = 0, resident = 0;
    g_assert_cmpint(sscanf(statm, "%lld %lld", &size, &resident), ==, 2);
    return (int64_t)resident * sysconf(_SC_PAGESIZE);
}

/* The headline on the CPU: "<ram> <this process's resident size>", not the engine's buffers. */
static void check_cpu_headline(HyocrWindow *win, const char *ram)
{
    HyocrVramGauge *gauge = hyocr_window_get_gauge(win);
    int64_t before = test_resident();
    hyocr_window_update_gauge(win);
    int64_t app = hyocr_vram_gauge_get_app_bytes(gauge), after = test_resident();
    const hyocr_mem_info *m = hyocr_vram_gauge_get_figures(gauge);
    g_assert_cmpint(app, >=, MIN(before, after) * 9 / 10);
    g_assert_cmpint(app, <=, MAX(before, after) * 11 / 10);
    g_assert_cmpint(app, >, m->weights + m->kv_reserved + m->workspace);
    g_autofree char *size = g_format_size_full((guint64)app, G_FORMAT_SIZE_IEC_UNITS);
    g_autofree char *want = g_strdup_printf("%s %s", ram, size);
    g_assert_cmpstr(hyocr_vram_gauge_get_summary(gauge), ==, want);
}

static gboolean worker_ready(gpointer worker)
{
    return hyocr_worker_get_state(worker) == HYOCR_WORKER_READY;
}

/* The gauge's first figures, in English and in Chinese, on the CPU: they come while the
 * engine is loaded but the main thread has not yet heard that the load ended (its context is
 * not run here), which once made the English headline "GPU 1.6 MiB" (the tiny weights) in
 * the screenshots while the Chinese one, taken later, said 内存 (RAM) and the process's size. */
static void test_gauge_cpu_headline(void)
{
    app_test_reset_settings();
    /* (app_test_init owns the main context: the worker's word that the load ended waits
     * for this thread, which does not run it here) */
    HyocrWindow *win = app_test_window("ckpt-flat", FALSE);
    HyocrWorker *worker = hyocr_window_get_worker(win);
    hyocr_mem_info mem;
    gint64 deadline = g_get_monotonic_time() + (gint64)APP_TEST_WAIT_MS * 1000;
    while (!hyocr_worker_get_mem_info(worker, &mem, NULL) && g_get_monotonic_time() < deadline) g_usleep(1000);
    g_assert_true(hyocr_worker_get_mem_info(worker, &mem, NULL));
    g_assert_cmpint(hyocr_worker_get_state(worker), !=, HYOCR_WORKER_READY);
    check_cpu_headline(win, "RAM");
    g_assert_cmpstr(hyocr_vram_gauge_get_device_text(hyocr_window_get_gauge(win)), ==, "RAM (running on the CPU)");

    /* the same in Chinese, from this build's catalog */
    const char *catalogs = g_getenv("HYOCR_LOCALEDIR");
    g_autofree char *mo = catalogs ? g_build_filename(catalogs, "zh_CN", "LC_MESSAGES", GETTEXT_PACKAGE ".mo", NULL)
                                   : NULL;
    if (!mo || !g_file_test(mo, G_FILE_TEST_EXISTS) || !setlocale(LC_ALL, "zh_CN.UTF-8")) {
        app_test_destroy_window(win);
        g_test_skip("no zh_CN catalog in this build (HYOCR_LOCALEDIR), or no zh_CN.UTF-8 locale");
        return;
    }
    g_setenv("LANGUAGE", "zh_CN", TRUE);
    bindtextdomain(GETTEXT_PACKAGE, catalogs);
    bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
    textdomain(GETTEXT_PACKAGE);
    check_cpu_headline(win, "内存");
    g_assert_cmpstr(hyocr_vram_gauge_get_device_text(hyocr_window_get_gauge(win)), ==, _("RAM (running on the CPU)"));
    g_assert_cmpstr(_("RAM (running on the CPU)"), !=, "RAM (running on the CPU)");
    /* and once the load is announced, still */
    g_assert_true(app_test_wait(worker_ready, worker, APP_TEST_WAIT_MS));
    check_cpu_headline(win, "内存");
    g_unsetenv("LANGUAGE");
    setlocale(LC_ALL, "");
    g_assert_cmpstr(_("RAM (running on the CPU)"), ==, "RAM (running on the CPU)");
    app_test_destroy_window(win);
}

static gboolean gauge_shows_no_cache(gpointer gauge)
{
    return hyocr_vram_gauge_get_figures(gauge)->kv_used == 0;
}

static void test_gauge(void)
{
    app_test_reset_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    HyocrVramGauge *gauge = hyocr_window_get_gauge(win);
    /* It refreshes by itself. */
    next_gauge_update(gauge, NULL);
    next_gauge_update(gauge, NULL);
    const hyocr_mem_info *m = hyocr_vram_gauge_get_figures(gauge);
    g_assert_cmpint(m->weights, >, 0);
    g_assert_cmpint(m->total, >, 0);
    g_assert_cmpint(m->kv_used, ==, 0);
    g_assert_nonnull(strstr(hyocr_vram_gauge_get_device_text(gauge), "CPU"));
    g_assert_true(g_str_has_prefix(hyocr_vram_gauge_get_summary(gauge), "RAM"));
    /* On the CPU "This app" is the whole process (resident), not the engine's buffers alone. */
    int64_t before = test_resident();
    next_gauge_update(gauge, NULL);
    int64_t app = hyocr_vram_gauge_get_app_bytes(gauge), after = test_resident();
    g_test_message("this app: %" G_GINT64_FORMAT " bytes (resident %" G_GINT64_FORMAT "…%" G_GINT64_FORMAT
                   "), the engine's buffers %" G_GINT64_FORMAT, app, before, after, m->weights + m->workspace);
    g_assert_cmpint(app, >=, MIN(before, after) * 9 / 10);
    g_assert_cmpint(app, <=, MAX(before, after) * 11 / 10);
    g_assert_cmpint(app, >, m->weights + m->kv_reserved + m->workspace);
    g_autofree char *app_text = g_format_size_full((guint64)app, G_FORMAT_SIZE_IEC_UNITS);
    g_assert_nonnull(strstr(hyocr_vram_gauge_get_summary(gauge), app_text));

    /* While a long answer is written, the cache in use grows and is shown: three
     * readings, each 200 tokens (a dozen 16-token blocks) after the one before. */
    g_autoptr(HyocrJob) job = long_job(win, "big_420x300.png", 30000);
    int64_t kv[3];
    TokenWait tw = { job, 100 };
    for (int i = 0; i < 3; i++) {
        g_assert_true(app_test_wait(tokens_reached, &tw, JOB_TIMEOUT_MS));
        GaugeWait g = next_gauge_update(gauge, job);
        kv[i] = g.kv;
        tw.tokens = g.tokens + 200;
    }
    g_assert_false(hyocr_job_is_finished(job));
    g_test_message("kv_used %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT " bytes", kv[0], kv[1], kv[2]);
    g_assert_cmpint(kv[0], >, 0);
    g_assert_cmpint(kv[1], >, kv[0]);
    g_assert_cmpint(kv[2], >, kv[1]);
    hyocr_job_cancel(job);
    app_test_wait_job(job, APP_TEST_WAIT_MS);
    g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_CANCELLED);
    /* The cache is given back when the job ends. */
    g_assert_true(app_test_wait(gauge_shows_no_cache, gauge, APP_TEST_WAIT_MS));
    app_test_destroy_window(win);
}

/* ---- memory: a photo's pixels are not kept for every job ---- */

/* d: the view, the side wanted, and where to find a texture it must no longer show (a
 * weak pointer: NULL once that one is gone) or NULL. */
static gboolean display_is(gpointer data)
{
    gpointer *d = data;
    GdkTexture *t = hyocr_result_view_get_display_texture(d[0]);
    gpointer *old = d[2];
    return t && (!old || (gpointer)t != *old) && MAX(gdk_texture_get_width(t), gdk_texture_get_height(t)) == GPOINTER_TO_INT(d[1]);
}

static gboolean pointer_cleared(gpointer data)
{
    return *(gpointer *)data == NULL;
}

/* Two 12-megapixel photos: once done, each job keeps a preview of 512 px at most
 * (not 37 MB of pixels); the shown one is read again from its file at display
 * size, and let go when another job is shown. */
static void test_photo_memory(void)
{
    app_test_reset_settings();
    use_max_tokens(4);
    g_settings_set_int(app_test_settings(), "max-image-side", 512);   /* the engine's input, not the point here */
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_autofree char *tmp = g_dir_make_tmp("hyocr-photo-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(tmp, "photo.png", NULL);
    g_autoptr(GBytes) px = g_bytes_new_take(g_malloc0((gsize)4000 * 3000 * 3), (gsize)4000 * 3000 * 3);
    g_autoptr(GdkTexture) big = gdk_memory_texture_new(4000, 3000, GDK_MEMORY_R8G8B8, px, 4000 * 3);
    g_assert_true(gdk_texture_save_to_png(big, path));
    g_autoptr(GFile) file = g_file_new_for_path(path);
    GFile *files[2] = { file, file };
    g_assert_cmpuint(hyocr_window_add_files(win, files, 2), ==, 2);
    for (guint i = 0; i < 2; i++) {
        HyocrJob *job = app_test_job_at(win, i);
        app_test_wait_job(job, JOB_TIMEOUT_MS);
        g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_DONE);
        GdkTexture *preview = hyocr_job_get_preview(job);
        g_assert_nonnull(preview);
        g_assert_cmpint(MAX(gdk_texture_get_width(preview), gdk_texture_get_height(preview)), <=, HYOCR_JOB_PREVIEW_SIDE);
    }
    HyocrResultView *view = hyocr_window_get_result_view(win);
    gpointer want[3] = { view, GINT_TO_POINTER(2048), NULL };
    g_assert_true(app_test_wait(display_is, want, APP_TEST_WAIT_MS));   /* the first job is shown */
    gpointer first = hyocr_result_view_get_display_texture(view);
    g_object_add_weak_pointer(first, &first);
    hyocr_window_select_job(win, app_test_job_at(win, 1));
    /* the second is read at the same size, so wait for another texture, not a size (the two
     * photos are alike: the first one's still shown passed for it on a loaded machine) */
    want[2] = &first;
    g_assert_true(app_test_wait(display_is, want, APP_TEST_WAIT_MS));
    /* nobody holds the first job's large image any more (the last frame drawn with it may
     * let go of it a main-loop turn later) */
    g_assert_true(app_test_wait(pointer_cleared, &first, APP_TEST_WAIT_MS));
    if (first) g_object_remove_weak_pointer(first, &first);
    app_test_destroy_window(win);
    g_remove(path);
    g_rmdir(tmp);
}

/* ---- result views ---- */

/* A job whose answer the test writes itself (claimed, so the worker skips it):
 * the view's parsing and hover are checked on a known answer. */
static HyocrJob *staged(HyocrWindow *win, HyocrPreset preset, const char *answer)
{
    g_settings_set_enum(app_test_settings(), "preset", preset);
    g_settings_set_strv(app_test_settings(), "fields", (const char *const[]){ "name", NULL });
    g_autoptr(HyocrJobOptions) opts = hyocr_job_options_new_from_settings(app_test_settings(), NULL);
    g_autofree char *path = app_test_data("images", "big_420x300.png", NULL);
    g_autoptr(GdkTexture) tex = gdk_texture_new_from_filename(path, NULL);
    HyocrJob *job = hyocr_job_new_for_texture(tex, "staged", opts, NULL);
    g_assert_true(hyocr_job_claim(job));
    hyocr_window_add_job(win, job);
    hyocr_job_post_state(job, HYOCR_JOB_WRITING);
    hyocr_job_post_piece(job, answer, 12);
    hyocr_job_post_finish(job, HYOCR_JOB_DONE, answer, NULL);
    app_test_wait_job(job, APP_TEST_WAIT_MS);
    app_test_wait_drawn(GTK_WIDGET(win));   /* laid out: the boxes have their places */
    return job;
}

static GtkEventController *motion_of(GtkWidget *w)
{
    g_autoptr(GListModel) ctrls = gtk_widget_observe_controllers(w);
    for (guint i = 0; i < g_list_model_get_n_items(ctrls); i++) {
        g_autoptr(GtkEventController) c = g_list_model_get_item(ctrls, i);
        if (GTK_IS_EVENT_CONTROLLER_MOTION(c)) return c;
    }
    return NULL;
}

static void test_spotting_view(void)
{
    app_test_reset_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_autoptr(HyocrJob) job = staged(win, HYOCR_PRESET_SPOTTING, "Hello(100,100),(400,200)\nWorld(500,600),(900,800)\n");
    HyocrResultView *view = hyocr_window_get_result_view(win);
    g_assert_cmpstr(hyocr_result_view_get_visible_page(view), ==, "lines");
    HyocrImageView *iv = hyocr_result_view_get_image_view(view);
    g_assert_cmpuint(hyocr_image_view_get_n_boxes(iv), ==, 2);
    GtkListBox *list = hyocr_result_view_get_lines_list(view);
    GtkWidget *row1 = GTK_WIDGET(gtk_list_box_get_row_at_index(list, 1));
    g_assert_nonnull(row1);

    /* Hovering a line highlights its box. */
    GtkEventController *motion = motion_of(row1);
    g_signal_emit_by_name(motion, "enter", 2.0, 2.0);
    g_assert_cmpint(hyocr_image_view_get_highlight(iv), ==, 1);
    g_signal_emit_by_name(motion, "leave");
    g_assert_cmpint(hyocr_image_view_get_highlight(iv), ==, -1);

    /* Boxes sit where the 0…1000 coordinates say, and hovering one marks its line. */
    graphene_rect_t b0, b1;
    g_assert_true(hyocr_image_view_get_box_bounds(iv, 0, &b0));
    g_assert_true(hyocr_image_view_get_box_bounds(iv, 1, &b1));
    g_assert_cmpfloat(b1.origin.x, >, b0.origin.x + b0.size.width);
    g_assert_cmpfloat(b1.size.width / b0.size.width, >, 1.2);
    g_signal_emit_by_name(motion_of(GTK_WIDGET(iv)), "motion", (double)(b0.origin.x + b0.size.width / 2),
                          (double)(b0.origin.y + b0.size.height / 2));
    g_assert_cmpint(hyocr_image_view_get_highlight(iv), ==, 0);
    g_assert_true(gtk_widget_has_css_class(GTK_WIDGET(gtk_list_box_get_row_at_index(list, 0)), "highlighted"));

    g_autofree char *display = hyocr_result_view_get_display_text(view);
    g_assert_cmpstr(display, ==, "Hello\nWorld");
    g_autofree char *json = hyocr_result_view_export(view, "json");
    g_assert_nonnull(strstr(json, "\"World\""));
    g_assert_nonnull(strstr(json, "900"));
    g_autofree char *txt = hyocr_result_view_export(view, "txt");
    g_assert_cmpstr(txt, ==, hyocr_job_get_text(job));
    app_test_destroy_window(win);
}

static void on_text_read(GObject *source, GAsyncResult *res, gpointer data)
{
    *(char **)data = gdk_clipboard_read_text_finish(GDK_CLIPBOARD(source), res, NULL);
}

static gboolean is_set(gpointer data)
{
    return *(char **)data != NULL;
}

static gboolean rendered(gpointer view)
{
    return !hyocr_result_view_is_rendering(view);
}

static GtkWidget *block_at(HyocrResultView *view, guint n)
{
    GtkWidget *w = gtk_widget_get_first_child(hyocr_rendered_view_get_blocks(hyocr_result_view_get_rendered_view(view)));
    while (w && n--) w = gtk_widget_get_next_sibling(w);
    return w;
}

static guint n_blocks(HyocrResultView *view)
{
    guint n = 0;
    while (block_at(view, n)) n++;
    return n;
}

/* The cell at (col, row) of a rendered table: its text, and its spans. */
static const char *cell_at(GtkWidget *grid, int col, int row, int *width, int *height)
{
    GtkWidget *cell = gtk_grid_get_child_at(GTK_GRID(grid), col, row);
    g_assert_nonnull(cell);
    int c, r;
    gtk_grid_query_child(GTK_GRID(grid), cell, &c, &r, width, height);
    return gtk_label_get_text(GTK_LABEL(cell));
}

static const char parsed_page[] =
    "# Invoice\n\nPaid **in full** &amp; on time.\n\n- first\n- second\n\n"
    "<table><tr><th>Item</th><th>Price</th></tr><tr><td>Paper</td><td rowspan=\"2\">€42</td></tr>"
    "<tr><td>Toner<br>2 pcs</td></tr><tr><td colspan=\"2\">Total</td></tr></table>\n\n"
    "| a | b |\n|---|---|\n| 1 | **2** |\n\n$$x^2$$\n";

/* A parse answer is shown rendered, with native widgets: headings, paragraphs with
 * their emphasis applied, list items, the model's HTML table and a Markdown table
 * as grids (spans kept), a formula as text; Source shows the answer as written and
 * Rendered comes back. Other tasks have no such view, and malformed HTML (a table
 * never closed, a colspan of 99999) still renders, its span capped. */
static void test_parse_rendered(void)
{
    app_test_reset_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    HyocrResultView *view = hyocr_window_get_result_view(win);
    g_autoptr(HyocrJob) job = staged(win, HYOCR_PRESET_PARSE_DOCUMENT, parsed_page);
    g_assert_true(app_test_wait(rendered, view, APP_TEST_WAIT_MS));
    g_assert_cmpstr(hyocr_result_view_get_visible_page(view), ==, "rendered");
    GtkWidget *source = hyocr_result_view_get_button(view, "source");
    g_assert_true(gtk_widget_is_visible(source));

    g_assert_cmpuint(n_blocks(view), ==, 7);
    GtkWidget *heading = block_at(view, 0);
    g_assert_cmpstr(gtk_label_get_text(GTK_LABEL(heading)), ==, "Invoice");
    g_assert_true(gtk_widget_has_css_class(heading, "title-1"));
    GtkWidget *para = block_at(view, 1);
    g_assert_cmpstr(gtk_label_get_text(GTK_LABEL(para)), ==, "Paid in full & on time.");
    g_assert_nonnull(strstr(gtk_label_get_label(GTK_LABEL(para)), "<b>in full</b>"));
    g_assert_cmpstr(gtk_label_get_text(GTK_LABEL(block_at(view, 2))), ==, "• first");
    g_assert_cmpstr(gtk_label_get_text(GTK_LABEL(block_at(view, 3))), ==, "• second");
    g_assert_cmpint(gtk_widget_get_margin_start(block_at(view, 2)), >, gtk_widget_get_margin_start(para));

    GtkWidget *html = block_at(view, 4);
    g_assert_true(GTK_IS_GRID(html));
    int w, h;
    g_assert_cmpstr(cell_at(html, 0, 0, &w, &h), ==, "Item");
    g_assert_true(gtk_widget_has_css_class(gtk_grid_get_child_at(GTK_GRID(html), 0, 0), "heading"));
    g_assert_cmpstr(cell_at(html, 1, 0, &w, &h), ==, "Price");
    g_assert_cmpstr(cell_at(html, 0, 1, &w, &h), ==, "Paper");
    g_assert_cmpstr(cell_at(html, 1, 1, &w, &h), ==, "€42");
    g_assert_cmpint(h, ==, 2);
    g_assert_true(gtk_grid_get_child_at(GTK_GRID(html), 1, 2) == gtk_grid_get_child_at(GTK_GRID(html), 1, 1));
    g_assert_cmpstr(cell_at(html, 0, 2, &w, &h), ==, "Toner\n2 pcs");
    g_assert_cmpstr(cell_at(html, 0, 3, &w, &h), ==, "Total");
    g_assert_cmpint(w, ==, 2);

    GtkWidget *md = block_at(view, 5);
    g_assert_true(GTK_IS_GRID(md));
    g_assert_cmpstr(cell_at(md, 0, 0, &w, &h), ==, "a");
    g_assert_cmpstr(cell_at(md, 1, 0, &w, &h), ==, "b");
    g_assert_cmpstr(cell_at(md, 0, 1, &w, &h), ==, "1");
    g_assert_cmpstr(cell_at(md, 1, 1, &w, &h), ==, "2");
    g_assert_cmpstr(gtk_label_get_label(GTK_LABEL(gtk_grid_get_child_at(GTK_GRID(md), 1, 1))), ==, "<b>2</b>");
    g_assert_cmpstr(gtk_label_get_text(GTK_LABEL(block_at(view, 6))), ==, "x^2");

    /* Source: the answer as written; Rendered again */
    gtk_toggle_button_set_active(GTK_TOGGLE_BUTTON(source), TRUE);
    g_assert_cmpstr(hyocr_result_view_get_visible_page(view), ==, "text");
    GtkTextBuffer *buf = gtk_text_view_get_buffer(hyocr_result_view_get_text_view(view));
    g_autofree char *shown = NULL;
    g_object_get(buf, "text", &shown, NULL);
    g_assert_cmpstr(shown, ==, parsed_page);
    gtk_toggle_button_set_active(GTK_TOGGLE_BUTTON(hyocr_result_view_get_button(view, "rendered")), TRUE);
    g_assert_cmpstr(hyocr_result_view_get_visible_page(view), ==, "rendered");
    app_test_wait_drawn(GTK_WIDGET(win));

    g_autoptr(HyocrJob) broken = staged(win, HYOCR_PRESET_PARSE_TABLE, "<table><tr><td>x<td colspan=99999>y</tr");
    hyocr_result_view_set_job(view, broken);
    g_assert_true(app_test_wait(rendered, view, APP_TEST_WAIT_MS));
    g_assert_cmpuint(n_blocks(view), ==, 1);
    g_assert_cmpstr(cell_at(block_at(view, 0), 0, 0, &w, &h), ==, "x");
    g_assert_cmpstr(cell_at(block_at(view, 0), 1, 0, &w, &h), ==, "y");
    g_assert_cmpint(w, ==, 64);

    g_autoptr(HyocrJob) plain = staged(win, HYOCR_PRESET_RECOGNIZE, "# not a heading here");
    hyocr_result_view_set_job(view, plain);
    g_assert_false(gtk_widget_is_visible(source));
    g_assert_cmpstr(hyocr_result_view_get_visible_page(view), ==, "text");
    app_test_wait_drawn(GTK_WIDGET(win));
    app_test_destroy_window(win);
}

static void test_fields_view(void)
{
    app_test_reset_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_autoptr(HyocrJob) job = staged(win, HYOCR_PRESET_EXTRACT_FIELDS, "```json\n{\"name\": \"Ann Lee\", \"total\": \"12\"}\n```");
    HyocrResultView *view = hyocr_window_get_result_view(win);
    GtkTextBuffer *buf = gtk_text_view_get_buffer(hyocr_result_view_get_text_view(view));
    g_autofree char *shown = NULL;
    g_object_get(buf, "text", &shown, NULL);
    g_assert_true(g_str_has_prefix(shown, "{"));
    g_assert_nonnull(strstr(shown, "\"name\" : \"Ann Lee\""));
    gtk_widget_activate_action(GTK_WIDGET(win), "win.copy-result", NULL);
    g_autofree char *copied = NULL;
    gdk_clipboard_read_text_async(gtk_widget_get_clipboard(GTK_WIDGET(win)), NULL, on_text_read, &copied);
    g_assert_true(app_test_wait(is_set, &copied, APP_TEST_WAIT_MS));
    g_assert_cmpstr(copied, ==, shown);
    g_assert_cmpstr(hyocr_window_get_last_toast(win), ==, "Copied");
    app_test_destroy_window(win);
}

/* ---- saving ---- */

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

/* The dialog opens beside the image (a pasted one: in Documents); the format
 * picked in it names the file; a saved JSON holds the result, not only its text. */
static void test_save(void)
{
    /* The name's ending, unless another format was picked. */
    g_autofree char *p1 = hyocr_window_save_path("/d/scan.txt", "json", TRUE);
    g_assert_cmpstr(p1, ==, "/d/scan.json");
    g_autofree char *p2 = hyocr_window_save_path("/d/notes.md", "txt", FALSE);
    g_assert_cmpstr(p2, ==, "/d/notes.md");
    g_autofree char *p3 = hyocr_window_save_path("/d/scan", "jsonl", FALSE);
    g_assert_cmpstr(p3, ==, "/d/scan.jsonl");
    g_autofree char *p4 = hyocr_window_save_path("/d/v1.2 scan", "md", TRUE);
    g_assert_cmpstr(p4, ==, "/d/v1.2 scan.md");

    app_test_reset_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_autoptr(GFile) image = app_test_image("tiny_40x30.png");
    g_autoptr(HyocrJobOptions) opts = hyocr_job_options_new_from_settings(app_test_settings(), NULL);
    g_autoptr(HyocrJob) file_job = hyocr_job_new_for_file(image, opts);
    g_autoptr(GFile) folder = hyocr_window_save_folder(file_job);
    g_autoptr(GFile) images = g_file_get_parent(image);
    g_assert_true(g_file_equal(folder, images));
    g_autoptr(HyocrJob) spot = staged(win, HYOCR_PRESET_SPOTTING, "Hello(100,100),(400,200)\nWorld(500,600),(900,800)\n");
    g_autoptr(GFile) pasted_folder = hyocr_window_save_folder(spot);
    const char *docs = g_get_user_special_dir(G_USER_DIRECTORY_DOCUMENTS);
    g_autofree char *want = g_strdup(docs && g_file_test(docs, G_FILE_TEST_IS_DIR) ? docs : g_get_home_dir());
    g_autofree char *got = g_file_get_path(pasted_folder);
    g_assert_cmpstr(got, ==, want);

    g_autofree char *tmp = g_dir_make_tmp("hyocr-save-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(tmp, "staged.json", NULL);
    g_autoptr(GFile) out = g_file_new_for_path(path);
    SaveWait w = { 0 };
    hyocr_window_save_to(win, out, on_saved, &w);
    g_assert_true(app_test_wait(save_done, &w, APP_TEST_WAIT_MS));
    g_assert_no_error(w.error);
    g_assert_true(w.ok);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_assert_true(json_parser_load_from_file(parser, path, NULL));
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, json_parser_get_root(parser));
    g_autofree char *saved = json_generator_to_data(gen, NULL);
    g_test_message("%s", saved);
    g_assert_nonnull(strstr(saved, "\"World\""));       /* the lines, each with its box */
    g_assert_nonnull(strstr(saved, "\"spotting\""));    /* the task */
    g_assert_nonnull(strstr(saved, "900"));
    g_remove(path);
    g_rmdir(tmp);
    app_test_destroy_window(win);
}

/* ---- dialogs ---- */

static GtkWindow *find_toplevel(GType type)
{
    GListModel *tops = gtk_window_get_toplevels();   /* transfer none */
    for (guint i = 0; i < g_list_model_get_n_items(tops); i++) {
        g_autoptr(GtkWindow) w = g_list_model_get_item(tops, i);
        if (G_TYPE_CHECK_INSTANCE_TYPE(w, type) && gtk_widget_get_visible(GTK_WIDGET(w))) return w;
    }
    return NULL;
}

static gboolean toplevel_shown(gpointer type)
{
    return find_toplevel((GType)GPOINTER_TO_SIZE(type)) != NULL;
}

/* The visible window of this type, once the action has presented it. */
static GtkWindow *wait_toplevel(GType type)
{
    app_test_wait(toplevel_shown, GSIZE_TO_POINTER(type), APP_TEST_WAIT_MS);
    return find_toplevel(type);
}

static gboolean toplevel_gone(gpointer type)
{
    return find_toplevel((GType)GPOINTER_TO_SIZE(type)) == NULL;
}

static void test_dialogs(void)
{
    app_test_reset_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    GActionGroup *app = G_ACTION_GROUP(app_test_app());
    g_action_group_activate_action(app, "about", NULL);
    GtkWindow *about = wait_toplevel(ADW_TYPE_ABOUT_WINDOW);
    g_assert_nonnull(about);
    if (about) gtk_window_destroy(about);

    g_action_group_activate_action(app, "preferences", NULL);
    GtkWindow *prefs = wait_toplevel(ADW_TYPE_PREFERENCES_WINDOW);
    g_assert_nonnull(prefs);
    if (prefs) gtk_window_destroy(prefs);

    gtk_widget_activate_action(GTK_WIDGET(win), "win.show-help-overlay", NULL);
    GtkWindow *shortcuts = wait_toplevel(GTK_TYPE_SHORTCUTS_WINDOW);
    g_assert_nonnull(shortcuts);
    if (shortcuts) gtk_window_close(shortcuts);
    g_assert_true(app_test_wait(toplevel_gone, GSIZE_TO_POINTER(GTK_TYPE_SHORTCUTS_WINDOW), APP_TEST_WAIT_MS));

    /* Without a session bus the notification is counted but not sent (and GLib stays quiet). */
    g_autoptr(GFile) file = app_test_image("tiny_40x30.png");
    use_max_tokens(4);
    hyocr_window_add_files(win, &file, 1);
    app_test_wait_job(app_test_job_at(win, 0), JOB_TIMEOUT_MS);
    guint n = hyocr_application_get_n_notifications(app_test_app());
    hyocr_application_notify_job(app_test_app(), app_test_job_at(win, 0));
    g_assert_cmpuint(hyocr_application_get_n_notifications(app_test_app()), ==, n + 1);
    app_test_destroy_window(win);
}

/* ---- small windows ---- */

/* Inside the window, left to right: nothing cut off at its edge. */
static gboolean inside(GtkWidget *w, GtkWidget *win)
{
    graphene_rect_t b;
    if (!gtk_widget_get_mapped(w) || !gtk_widget_compute_bounds(w, win, &b)) return FALSE;
    return b.origin.x >= 0 && b.origin.x + b.size.width <= gtk_widget_get_width(win) + 0.5 && b.size.width > 0;
}

static void check_header_inside(GtkWidget *w, GtkWidget *win, GString *bad)
{
    for (GtkWidget *c = gtk_widget_get_first_child(w); c; c = gtk_widget_get_next_sibling(c)) {
        if (!gtk_widget_get_mapped(c)) continue;
        if (GTK_IS_BUTTON(c) || GTK_IS_MENU_BUTTON(c) || HYOCR_IS_VRAM_GAUGE(c)) {
            if (!inside(c, win)) g_string_append_printf(bad, " %s", G_OBJECT_TYPE_NAME(c));
        } else {
            check_header_inside(c, win, bad);
        }
    }
}

/* Capture Screen Region in the header (GNOME HIG: an icon button whose tooltip names it
 * and its shortcut), inside the window, its icon found (the app's own, from the
 * resources: a missing one would draw as a broken image), and it is win.capture (that it
 * captures is test-app-capture's, which clicks it). */
static void check_capture_button(HyocrWindow *win)
{
    GtkWidget *b = win->capture_button;
    if (!inside(b, GTK_WIDGET(win))) g_test_fail_printf("the capture button is not inside the 360 px window");
    g_assert_nonnull(gtk_widget_get_ancestor(b, ADW_TYPE_HEADER_BAR));
    g_assert_cmpstr(gtk_actionable_get_action_name(GTK_ACTIONABLE(b)), ==, "win.capture");
    g_assert_cmpstr(gtk_widget_get_tooltip_text(b), ==, "Capture Screen Region (Ctrl+G)");
    const char *icon = gtk_button_get_icon_name(GTK_BUTTON(b));
    g_assert_true(gtk_icon_theme_has_icon(gtk_icon_theme_get_for_display(gtk_widget_get_display(b)), icon));
    GtkWidget *image = gtk_button_get_child(GTK_BUTTON(b));
    g_assert_true(GTK_IS_IMAGE(image) && gtk_image_get_storage_type(GTK_IMAGE(image)) == GTK_IMAGE_ICON_NAME);
}

static gboolean leaflet_shows(gpointer data)
{
    gpointer *d = data;
    return gtk_widget_get_mapped(d[0]) && inside(d[0], d[1]);
}

/* At 360 px (GNOME's smallest phone width) everything a running job needs is on
 * screen: the job list and the result take turns, the image folds behind a
 * button, and Cancel, Copy and Save stay inside the window. */
static void test_narrow(void)
{
    /* The window controls GNOME shows (org.gnome.desktop.wm.preferences button-layout,
     * 'appmenu:close'; Phosh, at this width, the same or none): GTK's own default, used
     * under Xvfb with no desktop, adds minimize and maximize (74 px more). */
    GtkSettings *gtk_settings = gtk_settings_get_default();
    g_autofree char *layout = NULL;
    g_object_get(gtk_settings, "gtk-decoration-layout", &layout, NULL);
    g_object_set(gtk_settings, "gtk-decoration-layout", "appmenu:close", NULL);
    app_test_reset_settings();
    g_settings_set_int(app_test_settings(), "window-width", 360);
    g_settings_set_int(app_test_settings(), "window-height", 640);
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    GtkWidget *w = GTK_WIDGET(win);
    /* after a frame: measured at once, the header may still hold the size it had while
     * the model loaded (spinner and "Loading the model…"), cached until the next layout */
    app_test_wait_drawn(w);
    int min = 0;
    gtk_widget_measure(w, GTK_ORIENTATION_HORIZONTAL, -1, &min, NULL, NULL, NULL);
    g_test_message("minimum width %d px", min);
    g_assert_cmpint(min, <=, 360);
    g_autoptr(HyocrJob) job = long_job(win, "big_420x300.png", 30000);
    g_assert_true(app_test_wait(writing_many, job, JOB_TIMEOUT_MS));
    app_test_wait_drawn(w);
    /* A running job's result needs no more room than the empty window did. */
    gtk_widget_measure(w, GTK_ORIENTATION_HORIZONTAL, -1, &min, NULL, NULL, NULL);
    g_test_message("minimum width with a job running %d px; the window is %d px", min, gtk_widget_get_width(w));
    g_assert_cmpint(min, <=, 360);
    if (g_getenv("HYOCR_NARROW_SHOT")) {
        g_autoptr(GdkTexture) t = app_test_render(w);
        gdk_texture_save_to_png(t, g_getenv("HYOCR_NARROW_SHOT"));
    }
    HyocrResultView *view = hyocr_window_get_result_view(win);
    static const char *const buttons[] = { "back", "image", "cancel", "copy", "save" };
    for (gsize i = 0; i < G_N_ELEMENTS(buttons); i++) {
        GtkWidget *b = hyocr_result_view_get_button(view, buttons[i]);
        if (!inside(b, w)) g_test_fail_printf("the %s button is not inside the 360 px window", buttons[i]);
    }
    g_autoptr(GString) bad = g_string_new(NULL);
    check_header_inside(w, w, bad);
    if (bad->len) g_test_fail_printf("cut off in the header:%s", bad->str);
    check_capture_button(win);
    /* Back shows the job list, in full; the job opens its result again. */
    gtk_widget_activate(hyocr_result_view_get_button(view, "back"));
    GtkWidget *list = GTK_WIDGET(gtk_list_box_get_row_at_index(GTK_LIST_BOX(win->job_list), 0));
    gpointer d[2] = { list, w };
    g_assert_true(app_test_wait(leaflet_shows, d, APP_TEST_WAIT_MS));
    g_signal_emit_by_name(win->job_list, "row-activated", list);
    gpointer r[2] = { hyocr_result_view_get_button(view, "cancel"), w };
    g_assert_true(app_test_wait(leaflet_shows, r, APP_TEST_WAIT_MS));
    hyocr_job_cancel(job);
    app_test_wait_job(job, JOB_TIMEOUT_MS);
    app_test_destroy_window(win);
    g_object_set(gtk_settings, "gtk-decoration-layout", layout, NULL);
}

/* ---- why not the GPU: said once, in full, where it belongs ---- */

/* Without a usable GPU (this build, or no NVIDIA driver), loads say nothing in a
 * toast; Preferences (under the device choice) and About (Troubleshooting) give
 * the whole explanation. */
static void test_gpu_note(void)
{
    app_test_reset_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    HyocrWorker *worker = hyocr_window_get_worker(win);
    g_autoptr(hyocr_gpu_report) r = hyocr_gpu_check(NULL);
    const char *note = hyocr_worker_get_gpu_note(worker);
    if (r->status == HYOCR_GPU_OK) {
        g_assert_null(note);
    } else {
        g_autofree char *want = g_strdup_printf("%s — %s", r->title, r->detail);
        g_assert_cmpstr(note, ==, want);
    }
    g_assert_cmpuint(hyocr_window_get_n_toasts(win), ==, 0);
    /* A Preferences change reloads the engine: still no toast. */
    g_settings_set_string(app_test_settings(), "device", "cpu");
    app_test_wait_worker(win, HYOCR_WORKER_LOADING);
    app_test_wait_worker(win, HYOCR_WORKER_READY);
    g_assert_null(hyocr_worker_get_gpu_note(worker));   /* the CPU was asked for */
    g_settings_set_string(app_test_settings(), "device", "auto");
    app_test_wait_worker(win, HYOCR_WORKER_LOADING);
    app_test_wait_worker(win, HYOCR_WORKER_READY);
    g_assert_cmpuint(hyocr_window_get_n_toasts(win), ==, 0);
    note = hyocr_worker_get_gpu_note(worker);

    HyocrPreferences *prefs = hyocr_preferences_new(win);
    gtk_window_present(GTK_WINDOW(prefs));
    g_assert_cmpstr(hyocr_preferences_get_device_note(prefs), ==, note);
    gtk_window_destroy(GTK_WINDOW(prefs));
    g_action_group_activate_action(G_ACTION_GROUP(app_test_app()), "about", NULL);
    GtkWindow *about = wait_toplevel(ADW_TYPE_ABOUT_WINDOW);
    g_assert_nonnull(about);
    if (about) {
        const char *debug = adw_about_window_get_debug_info(ADW_ABOUT_WINDOW(about));
        g_assert_nonnull(strstr(debug, "The engine runs on the CPU."));
        if (note) g_assert_nonnull(strstr(debug, note));
        gtk_window_destroy(about);
    }
    app_test_destroy_window(win);
}

/* ---- command line (last: it runs the application's main loop) ---- */

static gboolean cmdline_checked;

static gboolean cmdline_check(gpointer data)
{
    GtkWindow *active = gtk_application_get_active_window(GTK_APPLICATION(app_test_app()));
    if (!HYOCR_IS_WINDOW(active)) return G_SOURCE_CONTINUE;
    HyocrWindow *win = HYOCR_WINDOW(active);
    if (n_jobs(win) < 2 || !hyocr_job_is_finished(app_test_job_at(win, 1))) return G_SOURCE_CONTINUE;
    g_assert_cmpstr(hyocr_job_get_title(app_test_job_at(win, 0)), ==, "tiny_40x30.png");
    g_assert_cmpint(hyocr_job_get_state(app_test_job_at(win, 1)), ==, HYOCR_JOB_DONE);
    g_assert_cmpstr(hyocr_worker_get_model_dir(hyocr_window_get_worker(win)), ==, data);
    cmdline_checked = TRUE;
    gtk_window_destroy(active);
    return G_SOURCE_REMOVE;
}

static gboolean quit_app(gpointer app)
{
    g_application_quit(app);
    return G_SOURCE_REMOVE;
}

static void test_command_line(void)
{
    app_test_reset_settings();
    use_max_tokens(8);
    /* The setting points elsewhere: --model wins for the session. */
    g_settings_set_string(app_test_settings(), "model-folder", "/nonexistent");
    g_autofree char *model = app_test_data("ckpt-nested", NULL);
    g_autofree char *img = app_test_data("images", "tiny_40x30.png", NULL);
    g_autofree char *img2 = app_test_data("images", "square_200.png", NULL);
    char *argv[] = { "hyocr-gtk", "--model", model, img, img2, NULL };
    /* Polled: the window and its jobs come from inside g_application_run. */
    guint id = g_timeout_add(50, cmdline_check, model);
    guint guard = g_timeout_add(APP_TEST_WAIT_MS, quit_app, app_test_app());
    int status = g_application_run(G_APPLICATION(app_test_app()), 5, argv);
    g_assert_cmpint(status, ==, 0);
    g_assert_true(cmdline_checked);   /* not ended by the guard */
    g_assert_cmpstr(hyocr_application_get_model_override(app_test_app()), ==, model);
    g_source_remove(guard);
    if (!cmdline_checked) g_source_remove(id);
}

int main(int argc, char **argv)
{
    app_test_init(&argc, &argv);
    g_test_add_func("/app/window/drop-files", test_drop_files);
    g_test_add_func("/app/window/drop-folder", test_drop_folder);
    g_test_add_func("/app/window/parse-rendered", test_parse_rendered);
    g_test_add_func("/app/window/drop-texture", test_drop_texture);
    g_test_add_func("/app/window/paste", test_paste);
    g_test_add_func("/app/window/preset-changes-prompt", test_preset_changes_prompt);
    g_test_add_func("/app/window/stream-matches-cli", test_stream_matches_cli);
    g_test_add_func("/app/window/batch-matches-cli", test_batch_matches_cli);
    g_test_add_func("/app/window/join-running", test_join_running);
    g_test_add_func("/app/window/cancel", test_cancel);
    g_test_add_func("/app/window/broken-model", test_broken_model);
    g_test_add_func("/app/window/device-preference", test_device_preference);
    g_test_add_func("/app/window/corrupt-image", test_corrupt_image);
    g_test_add_func("/app/window/memory-refusal", test_memory_refusal);
    g_test_add_func("/app/window/run-again", test_run_again);
    g_test_add_func("/app/window/gauge", test_gauge);
    g_test_add_func("/app/window/photo-memory", test_photo_memory);
    g_test_add_func("/app/window/spotting-view", test_spotting_view);
    g_test_add_func("/app/window/fields-view", test_fields_view);
    g_test_add_func("/app/window/save", test_save);
    g_test_add_func("/app/window/dialogs", test_dialogs);
    g_test_add_func("/app/window/gpu-note", test_gpu_note);
    g_test_add_func("/app/window/narrow", test_narrow);
    /* (it switches the locale to zh_CN and back) */
    g_test_add_func("/app/window/gauge-cpu-headline", test_gauge_cpu_headline);
    g_test_add_func("/app/window/zz-command-line", test_command_line);
    return g_test_run();
}
