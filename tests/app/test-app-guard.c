/* Nothing lost by a click (hyocr-window-guard.c): closing or quitting with jobs running
 * or waiting asks first and says what would be lost; removing one job or the finished
 * ones can be undone; "Remove Finished Jobs" keeps what the history has not stored. */
#include "app-test.h"
#include "hyocr-history.h"
#include <glib/gstdio.h>

static void start(void)
{
    app_test_reset_settings();
    g_autofree char *path = hyocr_history_default_path();
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    g_autofree char *shm = g_strconcat(path, "-shm", NULL);
    g_remove(path);
    g_remove(wal);
    g_remove(shm);
}

static HyocrJob *add(HyocrWindow *win, const char *image, int max_new_tokens, gboolean ignore_eos)
{
    g_autoptr(HyocrJobOptions) opts = hyocr_job_options_new_from_settings(app_test_settings(), NULL);
    opts->max_new_tokens = max_new_tokens;
    opts->ignore_eos = ignore_eos;
    g_autoptr(GFile) file = app_test_image(image);
    g_autoptr(HyocrJob) job = hyocr_job_new_for_file(file, opts);
    hyocr_window_add_job(win, job);
    return job;   /* the window keeps it */
}

static gboolean is_writing(gpointer job)
{
    return hyocr_job_get_state(job) == HYOCR_JOB_WRITING;
}

static gboolean is_null(gpointer data)
{
    return *(gpointer *)data == NULL;
}

static const char *dialog_body(GtkWidget *dialog)
{
    return adw_message_dialog_get_body(ADW_MESSAGE_DIALOG(dialog));
}

/* ---- closing ---- */

static void test_close_asks(void)
{
    start();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    HyocrJob *done = add(win, "tiny_40x30.png", 8, FALSE);
    app_test_wait_job(done, APP_TEST_WAIT_MS);
    HyocrJob *running = add(win, "big_420x300.png", 30000, TRUE);
    add(win, "square_200.png", 8, FALSE);
    g_assert_true(app_test_wait(is_writing, running, APP_TEST_WAIT_MS));

    /* asked; kept running */
    gtk_window_close(GTK_WINDOW(win));
    GtkWidget *dialog = hyocr_window_get_close_dialog(win);
    g_assert_nonnull(dialog);
    g_assert_cmpstr(adw_message_dialog_get_heading(ADW_MESSAGE_DIALOG(dialog)), ==, "Stop 2 Jobs and Close?");
    g_assert_cmpstr(dialog_body(dialog), ==,
                    "“big_420x300.png” is being read; 1 job waits. They stop now; the history keeps every finished "
                    "result, and lists these as interrupted, to run again.");
    adw_message_dialog_response(ADW_MESSAGE_DIALOG(dialog), "cancel");
    g_assert_null(hyocr_window_get_close_dialog(win));
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(win)));
    g_assert_cmpint(hyocr_job_get_state(running), ==, HYOCR_JOB_WRITING);

    /* asked again; this time it closes, and the unfinished jobs wait in the history */
    gtk_window_close(GTK_WINDOW(win));
    dialog = hyocr_window_get_close_dialog(win);
    g_assert_nonnull(dialog);
    gpointer weak = win;
    g_object_add_weak_pointer(G_OBJECT(win), &weak);
    adw_message_dialog_response(ADW_MESSAGE_DIALOG(dialog), "close");
    g_assert_true(app_test_wait(is_null, &weak, APP_TEST_WAIT_MS));
    g_autofree char *path = hyocr_history_default_path();
    g_autoptr(hyocr_history) h = hyocr_history_open(path, NULL, NULL);
    g_assert_nonnull(h);
    g_assert_cmpint(hyocr_history_get_n_interrupted(h), ==, 2);
}

/* With the history off, the dialog says the finished results go too. */
static void test_close_history_off(void)
{
    start();
    g_settings_set_boolean(app_test_settings(), "history", FALSE);
    app_test_drain();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    HyocrJob *done = add(win, "tiny_40x30.png", 8, FALSE);
    app_test_wait_job(done, APP_TEST_WAIT_MS);
    HyocrJob *running = add(win, "big_420x300.png", 30000, TRUE);
    g_assert_true(app_test_wait(is_writing, running, APP_TEST_WAIT_MS));
    /* through app.quit (Ctrl+Q), as the window's close button */
    g_action_group_activate_action(G_ACTION_GROUP(app_test_app()), "quit", NULL);
    GtkWidget *dialog = hyocr_window_get_close_dialog(win);
    g_assert_nonnull(dialog);
    g_assert_cmpstr(adw_message_dialog_get_heading(ADW_MESSAGE_DIALOG(dialog)), ==, "Stop 1 Job and Close?");
    g_assert_cmpstr(dialog_body(dialog), ==,
                    "“big_420x300.png” is being read. They stop now and their results are lost: the history is off. "
                    "1 finished result is not in the history and is lost too.");
    adw_message_dialog_response(ADW_MESSAGE_DIALOG(dialog), "cancel");
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(win)));
    app_test_destroy_window(win);
}

/* Nothing running or waiting: it closes at once. */
static void test_close_idle(void)
{
    start();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    HyocrJob *done = add(win, "tiny_40x30.png", 8, FALSE);
    app_test_wait_job(done, APP_TEST_WAIT_MS);
    gpointer weak = win;
    g_object_add_weak_pointer(G_OBJECT(win), &weak);
    gtk_window_close(GTK_WINDOW(win));
    g_assert_true(app_test_wait(is_null, &weak, APP_TEST_WAIT_MS));
}

/* ---- removing ---- */

static guint position_of(HyocrWindow *win, HyocrJob *job)
{
    guint pos = G_MAXUINT;
    hyocr_window_find_job(win, hyocr_job_get_id(job), &pos);
    return pos;
}

static void test_undo_remove(void)
{
    start();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    HyocrJob *a = add(win, "tiny_40x30.png", 8, FALSE);
    HyocrJob *b = add(win, "square_200.png", 8, FALSE);
    app_test_wait_job(a, APP_TEST_WAIT_MS);
    app_test_wait_job(b, APP_TEST_WAIT_MS);
    HyocrJob *c = add(win, "big_420x300.png", 30000, TRUE);
    g_assert_true(app_test_wait(is_writing, c, APP_TEST_WAIT_MS));
    GListModel *jobs = hyocr_window_get_jobs(win);

    /* one job, from its row's button */
    gtk_widget_activate_action(GTK_WIDGET(win), "win.remove-job", "u", hyocr_job_get_id(b));
    g_assert_cmpuint(g_list_model_get_n_items(jobs), ==, 2);
    g_assert_cmpstr(hyocr_window_get_last_toast(win), ==, "“square_200.png” removed");
    gtk_widget_activate_action(GTK_WIDGET(win), "win.undo-remove", NULL);
    g_assert_cmpuint(g_list_model_get_n_items(jobs), ==, 3);
    g_assert_cmpuint(position_of(win, b), ==, 1);
    g_assert_cmpint(hyocr_job_get_state(b), ==, HYOCR_JOB_DONE);

    /* the finished ones: the running one stays */
    gtk_widget_activate_action(GTK_WIDGET(win), "win.clear-finished", NULL);
    g_assert_cmpuint(g_list_model_get_n_items(jobs), ==, 1);
    g_assert_cmpuint(position_of(win, c), ==, 0);
    g_assert_cmpstr(hyocr_window_get_last_toast(win), ==, "2 finished jobs removed");
    gtk_widget_activate_action(GTK_WIDGET(win), "win.undo-remove", NULL);
    g_assert_cmpuint(g_list_model_get_n_items(jobs), ==, 3);
    g_assert_cmpuint(position_of(win, a), ==, 0);
    g_assert_cmpuint(position_of(win, b), ==, 1);
    g_assert_cmpuint(position_of(win, c), ==, 2);
    g_assert_cmpstr(hyocr_job_get_text(a), !=, "");

    /* a running job removed is cancelled; Undo brings it back cancelled, not lost */
    gtk_widget_activate_action(GTK_WIDGET(win), "win.remove-job", "u", hyocr_job_get_id(c));
    app_test_wait_job(c, APP_TEST_WAIT_MS);
    gtk_widget_activate_action(GTK_WIDGET(win), "win.undo-remove", NULL);
    g_assert_cmpuint(position_of(win, c), ==, 2);
    g_assert_cmpint(hyocr_job_get_state(c), ==, HYOCR_JOB_CANCELLED);
    /* Undo twice restores nothing more */
    gtk_widget_activate_action(GTK_WIDGET(win), "win.undo-remove", NULL);
    g_assert_cmpuint(g_list_model_get_n_items(jobs), ==, 3);
    app_test_destroy_window(win);
}

/* Results the history has not stored stay when the finished jobs are removed. */
static void test_keeps_unstored(void)
{
    start();
    g_settings_set_boolean(app_test_settings(), "history", FALSE);
    app_test_drain();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    HyocrJob *a = add(win, "tiny_40x30.png", 8, FALSE);
    app_test_wait_job(a, APP_TEST_WAIT_MS);
    GListModel *jobs = hyocr_window_get_jobs(win);
    gtk_widget_activate_action(GTK_WIDGET(win), "win.clear-finished", NULL);
    g_assert_cmpuint(g_list_model_get_n_items(jobs), ==, 1);
    g_assert_cmpstr(hyocr_window_get_last_toast(win), ==, "The finished job stays: its result is not in the history");
    /* history on: a new job is stored and goes, the old one stays */
    g_settings_set_boolean(app_test_settings(), "history", TRUE);
    app_test_drain();
    HyocrJob *b = add(win, "square_200.png", 8, FALSE);
    app_test_wait_job(b, APP_TEST_WAIT_MS);
    g_assert_true(hyocr_job_is_stored(b));
    gtk_widget_activate_action(GTK_WIDGET(win), "win.clear-finished", NULL);
    g_assert_cmpuint(g_list_model_get_n_items(jobs), ==, 1);
    g_assert_cmpuint(position_of(win, a), ==, 0);
    g_assert_cmpstr(hyocr_window_get_last_toast(win), ==,
                    "1 finished job removed; those whose results are not in the history stay");
    app_test_destroy_window(win);
}

int main(int argc, char **argv)
{
    app_test_init(&argc, &argv);
    g_test_add_func("/app/guard/close-asks", test_close_asks);
    g_test_add_func("/app/guard/close-history-off", test_close_history_off);
    g_test_add_func("/app/guard/close-idle", test_close_idle);
    g_test_add_func("/app/guard/undo-remove", test_undo_remove);
    g_test_add_func("/app/guard/keeps-unstored", test_keeps_unstored);
    return g_test_run();
}
