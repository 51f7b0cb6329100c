/* The history of jobs (hyocr-history.c, hyocr-window-history.c, hyocr-history-view.c):
 * results survive closing the window and reopening the file; kill -9 of a real app
 * process in the middle of a batch loses no finished result and leaves the unfinished
 * jobs interrupted, with Run Again; search; history off writes nothing; a damaged,
 * locked or newer file; the migration from version 1; a failure's details. */
#include "app-test.h"
#include "hyocr-history.h"
#include "hyocr-spotting.h"
#include "error.h"
#include <glib/gstdio.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>

static char *db_path(void)
{
    return hyocr_history_default_path();
}

/* Each test starts without a history file (and without what a previous one set aside). */
static void remove_history(void)
{
    g_autofree char *dir = g_build_filename(g_get_user_data_dir(), "hyocr", NULL);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    for (const char *name; d && (name = g_dir_read_name(d));) {
        if (!g_str_has_prefix(name, "history.db")) continue;
        g_autofree char *path = g_build_filename(dir, name, NULL);
        g_remove(path);
    }
}

static void start(void)
{
    app_test_reset_settings();
    remove_history();
}

static HyocrJob *run_file(HyocrWindow *win, const char *image, hyocr_task task, int max_new_tokens)
{
    g_autoptr(HyocrJobOptions) opts = hyocr_job_options_new_from_settings(app_test_settings(), NULL);
    opts->task = task;
    opts->preset = task == HYOCR_TASK_SPOTTING ? HYOCR_PRESET_SPOTTING : HYOCR_PRESET_RECOGNIZE;
    opts->max_new_tokens = max_new_tokens;
    g_autoptr(GFile) file = app_test_image(image);
    g_autoptr(HyocrJob) job = hyocr_job_new_for_file(file, opts);
    hyocr_window_add_job(win, job);
    return job;   /* the window keeps it */
}

static gboolean page_is_history(gpointer win)
{
    return g_strcmp0(hyocr_window_get_page(win), "history") == 0;
}

/* ---- a result stored, the window closed, the file opened again ---- */

static void test_survives_restart(void)
{
    start();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "empty");   /* nothing in the history yet */
    HyocrJob *job = run_file(win, "tiny_40x30.png", HYOCR_TASK_RECOGNIZE, 12);
    HyocrJob *spot = run_file(win, "square_200.png", HYOCR_TASK_SPOTTING, 24);
    app_test_wait_job(job, APP_TEST_WAIT_MS);
    app_test_wait_job(spot, APP_TEST_WAIT_MS);
    g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_DONE);
    g_assert_true(hyocr_job_is_stored(job));
    g_assert_true(hyocr_job_is_stored(spot));
    g_assert_cmpuint(hyocr_window_get_n_history_writes(win), ==, 2);
    g_autofree char *text = g_strdup(hyocr_job_get_text(job));
    g_autofree char *spot_text = g_strdup(hyocr_job_get_text(spot));
    int n_tokens = hyocr_job_get_n_tokens(job);
    g_assert_cmpint(n_tokens, >, 0);
    app_test_destroy_window(win);

    /* what the file holds, read by another connection */
    g_autofree char *path = db_path();
    g_autoptr(GError) error = NULL;
    g_autoptr(hyocr_history) h = hyocr_history_open(path, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpint(hyocr_history_get_n_interrupted(h), ==, 0);
    g_autoptr(GPtrArray) all = hyocr_history_query(h, NULL, 0, &error);
    g_assert_cmpuint(all->len, ==, 2);
    hyocr_history_entry *s = all->pdata[0], *r = all->pdata[1];   /* newest first */
    g_assert_cmpstr(r->text, ==, text);
    g_assert_cmpint(r->state, ==, HYOCR_HISTORY_DONE);
    g_assert_cmpstr(r->preset, ==, "recognize");
    g_assert_true(g_str_has_suffix(r->path, "tiny_40x30.png"));
    g_assert_null(r->boxes);
    g_assert_cmpstr(r->engine, ==, "CPU");
    g_assert_true(g_str_has_suffix(r->model, "ckpt-flat"));
    g_assert_cmpint(r->n_tokens, ==, n_tokens);
    g_assert_nonnull(r->stop_reason);
    /* measured from the engine's events, not left at zero */
    g_assert_nonnull(strstr(r->timings, "\"total_ms\": "));
    g_assert_null(strstr(r->timings, "\"total_ms\": 0.0,"));
    g_assert_null(strstr(r->timings, "\"first_token_ms\": 0.0,"));
    g_assert_nonnull(strstr(r->options, "\"max_new_tokens\":12"));
    g_assert_cmpstr(s->text, ==, spot_text);
    g_autoptr(GPtrArray) lines = hyocr_spotting_parse(spot_text);
    g_autofree char *boxes = hyocr_spotting_to_json(lines);
    g_assert_cmpstr(s->boxes, ==, boxes);
    g_clear_pointer(&h, hyocr_history_free);

    /* a new window starts on the history, and an entry opens as the job it was */
    win = app_test_window("ckpt-flat", TRUE);
    g_assert_true(page_is_history(win));
    HyocrHistoryView *view = hyocr_window_get_history_view(win);
    g_assert_cmpuint(hyocr_history_view_get_n_entries(view), ==, 2);
    /* the page fits GNOME's smallest phone width (the header's width is the window's own matter) */
    int min = 0;
    gtk_widget_measure(GTK_WIDGET(view), GTK_ORIENTATION_HORIZONTAL, -1, &min, NULL, NULL, NULL);
    g_assert_cmpint(min, <=, 360);
    HyocrJob *again = hyocr_window_history_open(win, hyocr_history_view_get_entry_id(view, 1));
    g_assert_nonnull(again);
    g_assert_cmpint(hyocr_job_get_state(again), ==, HYOCR_JOB_DONE);
    g_assert_cmpstr(hyocr_job_get_text(again), ==, text);
    g_assert_true(hyocr_window_get_selected_job(win) == again);
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "jobs");
    /* shown, not run or stored again */
    g_assert_cmpuint(hyocr_window_get_n_history_writes(win), ==, 0);
    app_test_destroy_window(win);
}

/* ---- kill -9 in the middle of a batch ---- */

#define CHILD_ARG "--child-batch"

/* The child: a window running a short job and two long ones; it says when the short one is
 * stored and the first long one is writing, and waits to be killed. */
static gboolean child_ready(gpointer data)
{
    HyocrWindow *win = data;
    return hyocr_window_get_n_history_writes(win) == 1 &&
           hyocr_job_get_state(app_test_job_at(win, 1)) == HYOCR_JOB_WRITING;
}

static int child_batch(void)
{
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    run_file(win, "tiny_40x30.png", HYOCR_TASK_RECOGNIZE, 12);
    for (int i = 0; i < 2; i++) {
        g_autoptr(HyocrJobOptions) opts = hyocr_job_options_new_from_settings(app_test_settings(), NULL);
        opts->max_new_tokens = 30000;   /* far longer than the parent takes to kill us */
        opts->ignore_eos = TRUE;
        g_autoptr(GFile) file = app_test_image("big_420x300.png");
        g_autoptr(HyocrJob) job = hyocr_job_new_for_file(file, opts);
        hyocr_window_add_job(win, job);
    }
    if (!app_test_wait(child_ready, win, APP_TEST_WAIT_MS)) {
        g_print("not ready\n");
        return 1;
    }
    g_autofree char *text = g_strescape(hyocr_job_get_text(app_test_job_at(win, 0)), NULL);
    g_print("stored %s\n", text);
    fflush(stdout);
    for (;;) g_main_context_iteration(NULL, TRUE);
}

static void test_kill_9(void)
{
    start();
    g_autoptr(GError) error = NULL;
    g_autoptr(GSubprocess) child = g_subprocess_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error, "/proc/self/exe",
                                                    CHILD_ARG, NULL);
    g_assert_no_error(error);
    g_autoptr(GDataInputStream) out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(child));
    /* GTest may say a word first ("TAP version 13") */
    char *line = NULL;
    while ((line = g_data_input_stream_read_line_utf8(out, NULL, NULL, &error)) && !g_str_has_prefix(line, "stored ")) {
        g_test_message("child: %s", line);
        g_free(line);
    }
    g_assert_no_error(error);
    g_assert_nonnull(line);
    kill(atoi(g_subprocess_get_identifier(child)), SIGKILL);
    g_assert_true(g_subprocess_wait(child, NULL, &error));
    g_assert_true(g_subprocess_get_if_signaled(child));
    g_assert_cmpint(g_subprocess_get_term_sig(child), ==, SIGKILL);

    g_autofree char *shown = g_strcompress(line + strlen("stored "));
    g_free(line);

    /* The window of the next start: the finished job with the text the child showed, the
     * others interrupted (and the window says so as it opens). */
    HyocrWindow *win = app_test_window("ckpt-flat", FALSE);
    g_assert_nonnull(hyocr_window_get_history(win));
    g_assert_cmpint(hyocr_history_get_n_interrupted(hyocr_window_get_history(win)), ==, 2);
    g_assert_nonnull(strstr(hyocr_window_get_last_toast(win), "2 jobs were interrupted"));
    HyocrHistoryView *view = hyocr_window_get_history_view(win);
    g_assert_cmpuint(hyocr_history_view_get_n_entries(view), ==, 3);
    g_assert_cmpint(hyocr_history_view_get_entry_state(view, 0), ==, HYOCR_HISTORY_INTERRUPTED);
    g_assert_cmpint(hyocr_history_view_get_entry_state(view, 1), ==, HYOCR_HISTORY_INTERRUPTED);
    g_assert_cmpint(hyocr_history_view_get_entry_state(view, 2), ==, HYOCR_HISTORY_DONE);
    g_autoptr(hyocr_history_entry) done = hyocr_history_get(hyocr_window_get_history(win),
                                                            hyocr_history_view_get_entry_id(view, 2), &error);
    g_assert_no_error(error);
    g_assert_cmpstr(done->text, ==, shown);
    g_assert_cmpstr(done->text, !=, "");
    /* the same answer the command gives */
    g_autofree char *streamed = NULL, *final_text = NULL;
    app_test_cli_run("ckpt-flat", "tiny_40x30.png", "recognize", 12, &streamed, &final_text);
    g_assert_cmpstr(done->text, ==, final_text);

    /* Run Again: the interrupted entry becomes a new job (and a new entry in its place) */
    gint64 interrupted = hyocr_history_view_get_entry_id(view, 1);
    HyocrJob *job = hyocr_window_history_run_again(win, interrupted);
    g_assert_nonnull(job);
    g_assert_true(g_str_has_suffix(hyocr_job_get_title(job), "big_420x300.png"));
    g_assert_cmpint(hyocr_job_get_options(job)->max_new_tokens, ==, 30000);
    g_assert_true(hyocr_job_get_options(job)->ignore_eos == FALSE);   /* a benchmark knob, not stored */
    hyocr_job_cancel(job);
    app_test_wait_job(job, APP_TEST_WAIT_MS);
    g_autoptr(hyocr_history_entry) gone = hyocr_history_get(hyocr_window_get_history(win), interrupted, &error);
    g_assert_null(gone);
    g_assert_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&error);
    hyocr_history_view_reload(view);
    g_assert_cmpuint(hyocr_history_view_get_n_entries(view), ==, 3);
    g_assert_cmpint(hyocr_history_view_get_entry_state(view, 0), ==, HYOCR_HISTORY_CANCELLED);
    app_test_destroy_window(win);
}

/* ---- search ---- */

static void add_done(hyocr_history *h, const char *title, const char *text)
{
    g_autoptr(hyocr_history_entry) e = hyocr_history_entry_new();
    e->created = g_get_real_time();
    e->title = g_strdup(title);
    e->path = g_strdup("/nowhere/x.png");
    e->preset = g_strdup("recognize");
    e->options = g_strdup("{\"task\":\"recognize\"}");
    g_autoptr(GError) error = NULL;
    g_assert_true(hyocr_history_add(h, e, &error));
    g_assert_no_error(error);
    g_assert_cmpint(e->id, >, 0);
    e->state = HYOCR_HISTORY_DONE;
    e->text = g_strdup(text);
    e->finished = g_get_real_time();
    g_assert_true(hyocr_history_finish(h, e, &error));
}

static guint n_found(hyocr_history *h, const char *search)
{
    g_autoptr(GPtrArray) found = hyocr_history_query(h, search, 0, NULL);
    return found ? found->len : 999;
}

typedef struct {
    HyocrHistoryView *view;
    guint             n;
} ViewCount;

static gboolean view_has(gpointer data)
{
    ViewCount *c = data;
    return hyocr_history_view_get_n_entries(c->view) == c->n;
}

static void test_search(void)
{
    start();
    g_autofree char *path = db_path();
    g_autoptr(GError) error = NULL;
    g_autoptr(hyocr_history) h = hyocr_history_open(path, NULL, &error);
    g_assert_no_error(error);
    add_done(h, "receipt.jpg", "Total 42.00 EUR\nThank you");
    add_done(h, "menu.png", "Apple pie 100% butter");
    add_done(h, "SignPhotographedAtTheStationEntranceOnARainyDayInDecember20261203.png", "出口 EXIT");
    g_assert_cmpuint(n_found(h, NULL), ==, 3);
    g_assert_cmpuint(n_found(h, "thank YOU"), ==, 1);     /* any case */
    g_assert_cmpuint(n_found(h, "出口"), ==, 1);
    g_assert_cmpuint(n_found(h, "menu"), ==, 1);          /* the title too */
    g_assert_cmpuint(n_found(h, "RAINY"), ==, 1);
    g_assert_cmpuint(n_found(h, "%"), ==, 1);             /* LIKE's wildcards are the characters */
    g_assert_cmpuint(n_found(h, "_"), ==, 0);
    g_assert_cmpuint(n_found(h, "nothing like it"), ==, 0);
    g_clear_pointer(&h, hyocr_history_free);

    /* the view's search field */
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    HyocrHistoryView *view = hyocr_window_get_history_view(win);
    ViewCount c = { view, 3 };
    g_assert_true(view_has(&c));
    g_assert_true(page_is_history(win));
    /* a long name is ellipsized: the page still fits GNOME's smallest phone width */
    int min = 0;
    gtk_widget_measure(GTK_WIDGET(view), GTK_ORIENTATION_HORIZONTAL, -1, &min, NULL, NULL, NULL);
    g_assert_cmpint(min, <=, 360);
    gtk_editable_set_text(hyocr_history_view_get_search(view), "pie");
    c.n = 1;
    g_assert_true(app_test_wait(view_has, &c, APP_TEST_WAIT_MS));
    gtk_editable_set_text(hyocr_history_view_get_search(view), "");
    c.n = 3;
    g_assert_true(app_test_wait(view_has, &c, APP_TEST_WAIT_MS));
    /* delete one, then clear all */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(view), "history.delete", "x",
                                             hyocr_history_view_get_entry_id(view, 0)));
    g_assert_cmpuint(hyocr_history_view_get_n_entries(view), ==, 2);
    hyocr_history_view_clear(view);
    g_assert_cmpuint(hyocr_history_view_get_n_entries(view), ==, 0);
    g_assert_cmpuint(n_found(hyocr_window_get_history(win), NULL), ==, 0);
    app_test_destroy_window(win);
}

/* ---- history off ---- */

static void test_off_writes_nothing(void)
{
    start();
    g_settings_set_boolean(app_test_settings(), "history", FALSE);
    app_test_drain();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    g_assert_null(hyocr_window_get_history(win));
    HyocrJob *job = run_file(win, "tiny_40x30.png", HYOCR_TASK_RECOGNIZE, 8);
    app_test_wait_job(job, APP_TEST_WAIT_MS);
    g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_DONE);
    g_assert_false(hyocr_job_is_stored(job));
    g_autofree char *path = db_path();
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    g_assert_false(g_file_test(wal, G_FILE_TEST_EXISTS));
    /* on again: from now on */
    g_settings_set_boolean(app_test_settings(), "history", TRUE);
    app_test_drain();
    g_assert_nonnull(hyocr_window_get_history(win));
    job = run_file(win, "tiny_40x30.png", HYOCR_TASK_RECOGNIZE, 8);
    app_test_wait_job(job, APP_TEST_WAIT_MS);
    g_assert_true(hyocr_job_is_stored(job));
    g_assert_cmpuint(hyocr_history_view_get_n_entries(hyocr_window_get_history_view(win)), ==, 1);
    /* off again: closed at once, and the next job is not written */
    g_settings_set_boolean(app_test_settings(), "history", FALSE);
    app_test_drain();
    g_assert_null(hyocr_window_get_history(win));
    GStatBuf before, after;
    g_assert_cmpint(g_stat(path, &before), ==, 0);
    job = run_file(win, "square_200.png", HYOCR_TASK_RECOGNIZE, 8);
    app_test_wait_job(job, APP_TEST_WAIT_MS);
    g_assert_false(hyocr_job_is_stored(job));
    g_assert_cmpint(g_stat(path, &after), ==, 0);
    g_assert_cmpint(before.st_mtime, ==, after.st_mtime);
    g_assert_cmpint(before.st_size, ==, after.st_size);
    g_assert_false(g_file_test(wal, G_FILE_TEST_EXISTS));   /* the last close checkpointed it */
    app_test_destroy_window(win);
    g_autoptr(hyocr_history) h = hyocr_history_open(path, NULL, NULL);
    g_assert_cmpuint(n_found(h, NULL), ==, 1);
}

/* ---- a file that cannot be used ---- */

static char *find_aside(void)
{
    g_autofree char *path = db_path();
    g_autofree char *dir = g_path_get_dirname(path);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    for (const char *name; d && (name = g_dir_read_name(d));)
        if (g_str_has_prefix(name, "history.db.broken-") && !g_str_has_suffix(name, "-wal") &&
            !g_str_has_suffix(name, "-shm"))
            return g_build_filename(dir, name, NULL);
    return NULL;
}

static void test_corrupt_file(void)
{
    start();
    g_autofree char *path = db_path();
    g_autofree char *dir = g_path_get_dirname(path);
    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    const char *garbage = "this is not a database, it was overwritten by something else\n";
    g_assert_true(g_file_set_contents(path, garbage, -1, NULL));
    HyocrWindow *win = app_test_window("ckpt-flat", FALSE);
    /* the window says so as it opens, and where the file went */
    g_autofree char *aside = find_aside();
    g_assert_nonnull(aside);
    const char *toast = hyocr_window_get_last_toast(win);
    g_assert_nonnull(toast);
    g_test_message("toast: %s", toast);
    g_assert_nonnull(strstr(toast, "The history could not be read (file is not a database). It was moved to "));
    g_assert_nonnull(strstr(toast, aside));
    g_autofree char *kept = NULL;
    g_assert_true(g_file_get_contents(aside, &kept, NULL, NULL));
    g_assert_cmpstr(kept, ==, garbage);
    /* OCR goes on, into a new history */
    HyocrJob *job = run_file(win, "tiny_40x30.png", HYOCR_TASK_RECOGNIZE, 8);
    app_test_wait_job(job, APP_TEST_WAIT_MS);
    g_assert_true(hyocr_job_is_stored(job));
    app_test_destroy_window(win);
}

/* A damaged page inside a real database: quick_check finds it at open. */
static void test_damaged_page(void)
{
    start();
    g_autofree char *path = db_path();
    {
        g_autoptr(hyocr_history) h = hyocr_history_open(path, NULL, NULL);
        for (int i = 0; i < 200; i++) add_done(h, "page.png", "a line of text that fills the pages of the table");
    }
    /* overwrite the middle of the file (the table's pages, not the header) */
    g_autofree char *data = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(path, &data, &len, NULL));
    g_assert_cmpuint(len, >, 16384);
    memset(data + 4096, 0xA5, len - 8192);
    g_assert_true(g_file_set_contents(path, data, (gssize)len, NULL));
    g_autofree char *notice = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(hyocr_history) h = hyocr_history_open(path, &notice, &error);
    g_assert_no_error(error);
    g_assert_nonnull(h);
    g_assert_nonnull(notice);
    g_assert_true(g_str_has_prefix(notice, "The history could not be read ("));
    g_autofree char *aside = find_aside();
    g_assert_nonnull(aside);
    g_assert_nonnull(strstr(notice, aside));
    g_assert_cmpuint(n_found(h, NULL), ==, 0);
}

/* Another program holds the file locked: set aside after the busy timeout, never a wait for good. */
static void test_locked_file(void)
{
    start();
    g_autofree char *path = db_path();
    g_autofree char *dir = g_path_get_dirname(path);
    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    sqlite3 *other = NULL;
    g_assert_cmpint(sqlite3_open(path, &other), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_exec(other, "CREATE TABLE t (x); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1);", NULL, NULL,
                                 NULL), ==, SQLITE_OK);
    g_autofree char *notice = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(hyocr_history) h = hyocr_history_open(path, &notice, &error);
    g_assert_no_error(error);
    g_assert_nonnull(h);
    g_assert_nonnull(notice);
    g_assert_nonnull(strstr(notice, "database is locked"));
    add_done(h, "after.png", "written to the new file");
    g_assert_cmpuint(n_found(h, NULL), ==, 1);
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
}

static void test_newer_file(void)
{
    start();
    g_autofree char *path = db_path();
    g_autofree char *dir = g_path_get_dirname(path);
    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    sqlite3 *db = NULL;
    g_assert_cmpint(sqlite3_open(path, &db), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_exec(db, "CREATE TABLE future (x); PRAGMA user_version = 99;", NULL, NULL, NULL), ==,
                    SQLITE_OK);
    sqlite3_close(db);
    g_autoptr(GError) error = NULL;
    g_autoptr(hyocr_history) h = hyocr_history_open(path, NULL, &error);
    g_assert_null(h);
    g_assert_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG);
    g_assert_nonnull(strstr(error->message, "written by a newer version of hyocr (history version 99"));
    g_autofree char *aside = find_aside();
    g_assert_null(aside);   /* left as it is, for the newer app */
    /* the window runs without a history and says why */
    HyocrWindow *win = app_test_window("ckpt-flat", FALSE);
    g_assert_null(hyocr_window_get_history(win));
    g_assert_nonnull(strstr(hyocr_window_get_last_toast(win), "The history is off for this session"));
    app_test_destroy_window(win);
}

/* ---- a file of version 1 ---- */

/* Version 1 as it was written: the statement is the test's own, not the app's. */
static const char v1_schema[] =
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY, created INTEGER NOT NULL, finished INTEGER NOT NULL DEFAULT 0,"
    " state TEXT NOT NULL, title TEXT NOT NULL, path TEXT, page INTEGER NOT NULL DEFAULT 0, image BLOB,"
    " preset TEXT NOT NULL, options TEXT NOT NULL, text TEXT NOT NULL DEFAULT '', error TEXT);"
    "INSERT INTO jobs (created, finished, state, title, path, preset, options, text) VALUES"
    " (1700000000000000, 1700000005000000, 'done', 'old.png', '/old/old.png', 'recognize',"
    "  '{\"task\":\"recognize\",\"max_new_tokens\":100}', 'text from version one');"
    "INSERT INTO jobs (created, state, title, preset, options) VALUES"
    " (1700000100000000, 'queued', 'pasted', 'translate', '{\"task\":\"translate_zh\"}');"
    "PRAGMA user_version = 1;";

static void test_migration_v1(void)
{
    start();
    g_autofree char *path = db_path();
    g_autofree char *dir = g_path_get_dirname(path);
    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    sqlite3 *db = NULL;
    g_assert_cmpint(sqlite3_open(path, &db), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_exec(db, v1_schema, NULL, NULL, NULL), ==, SQLITE_OK);
    sqlite3_close(db);

    g_autoptr(GError) error = NULL;
    g_autofree char *notice = NULL;
    g_autoptr(hyocr_history) h = hyocr_history_open(path, &notice, &error);
    g_assert_no_error(error);
    g_assert_null(notice);
    g_assert_cmpint(hyocr_history_get_n_interrupted(h), ==, 1);   /* the queued one */
    g_autoptr(GPtrArray) all = hyocr_history_query(h, NULL, 0, &error);
    g_assert_cmpuint(all->len, ==, 2);
    hyocr_history_entry *pasted = all->pdata[0], *old = all->pdata[1];
    g_assert_cmpstr(old->text, ==, "text from version one");
    g_assert_cmpint(old->state, ==, HYOCR_HISTORY_DONE);
    g_assert_cmpstr(old->path, ==, "/old/old.png");
    g_assert_null(old->boxes);          /* the columns of version 2, empty */
    g_assert_null(old->engine);
    g_assert_cmpint(old->n_tokens, ==, 0);
    g_assert_cmpint(pasted->state, ==, HYOCR_HISTORY_INTERRUPTED);
    /* version 2 columns are written from now on */
    g_autoptr(hyocr_history_entry) e = hyocr_history_get(h, old->id, &error);
    g_free(e->engine);
    e->engine = g_strdup("GPU");
    g_assert_true(hyocr_history_finish(h, e, &error));
    g_clear_pointer(&h, hyocr_history_free);
    g_assert_cmpint(sqlite3_open(path, &db), ==, SQLITE_OK);
    sqlite3_stmt *st = NULL;
    g_assert_cmpint(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
    g_assert_cmpint(sqlite3_column_int(st, 0), ==, HYOCR_HISTORY_VERSION);
    sqlite3_finalize(st);
    g_assert_cmpint(sqlite3_prepare_v2(db, "SELECT engine FROM jobs WHERE title = 'old.png'", -1, &st, NULL), ==,
                    SQLITE_OK);
    g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
    g_assert_cmpstr((const char *)sqlite3_column_text(st, 0), ==, "GPU");
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* ---- a failure kept, with its details for a bug report ---- */

static void on_text_read(GObject *source, GAsyncResult *res, gpointer data)
{
    *(char **)data = gdk_clipboard_read_text_finish(GDK_CLIPBOARD(source), res, NULL);
}

static gboolean is_set(gpointer data)
{
    return *(char **)data != NULL;
}

static void test_failure_details(void)
{
    start();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    /* a file that is not an image, named like one */
    g_autofree char *bogus = g_build_filename(g_get_user_data_dir(), "not-an-image.png", NULL);
    g_assert_true(g_file_set_contents(bogus, "no pixels here", -1, NULL));
    g_autoptr(GFile) file = g_file_new_for_path(bogus);
    g_autoptr(HyocrJobOptions) opts = hyocr_job_options_new_from_settings(app_test_settings(), NULL);
    g_autoptr(HyocrJob) job = hyocr_job_new_for_file(file, opts);
    hyocr_window_add_job(win, job);
    app_test_wait_job(job, APP_TEST_WAIT_MS);
    g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_FAILED);
    g_assert_true(hyocr_job_is_stored(job));
    HyocrHistoryView *view = hyocr_window_get_history_view(win);
    g_assert_cmpint(hyocr_history_view_get_entry_state(view, 0), ==, HYOCR_HISTORY_FAILED);
    gint64 id = hyocr_history_view_get_entry_id(view, 0);
    g_autoptr(hyocr_history_entry) e = hyocr_history_get(hyocr_window_get_history(win), id, NULL);
    g_assert_cmpstr(e->error, ==, hyocr_job_get_message(job));
    g_assert_cmpstr(e->path, ==, bogus);

    /* through the row's menu */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(view), "history.copy-details", "x", id));
    g_assert_cmpstr(hyocr_window_get_last_toast(win), ==, "The details are on the clipboard, ready for a bug report");
    char *copied = NULL;
    gdk_clipboard_read_text_async(gtk_widget_get_clipboard(GTK_WIDGET(win)), NULL, on_text_read, &copied);
    g_assert_true(app_test_wait(is_set, &copied, APP_TEST_WAIT_MS));
    g_autofree char *want_error = g_strdup_printf("Error: %s\n", hyocr_job_get_message(job));
    g_autofree char *want_source = g_strdup_printf("Source: %s, page 1\n", bogus);
    g_assert_nonnull(strstr(copied, want_error));
    g_assert_nonnull(strstr(copied, want_source));
    g_assert_nonnull(strstr(copied, "Job: not-an-image.png (failed)\n"));
    g_assert_nonnull(strstr(copied, "Preset: recognize\nOptions: {\"task\":\"recognize\""));
    g_assert_nonnull(strstr(copied, "Engine: CPU\n"));
    g_free(copied);
    app_test_destroy_window(win);
}

int main(int argc, char **argv)
{
    gboolean child = argc > 1 && g_str_equal(argv[1], CHILD_ARG);
    app_test_init(&argc, &argv);
    if (child) return child_batch();
    g_test_add_func("/app/history/survives-restart", test_survives_restart);
    g_test_add_func("/app/history/kill-9", test_kill_9);
    g_test_add_func("/app/history/search", test_search);
    g_test_add_func("/app/history/off-writes-nothing", test_off_writes_nothing);
    g_test_add_func("/app/history/corrupt-file", test_corrupt_file);
    g_test_add_func("/app/history/damaged-page", test_damaged_page);
    g_test_add_func("/app/history/locked-file", test_locked_file);
    g_test_add_func("/app/history/newer-file", test_newer_file);
    g_test_add_func("/app/history/migration-v1", test_migration_v1);
    g_test_add_func("/app/history/failure-details", test_failure_details);
    return g_test_run();
}
