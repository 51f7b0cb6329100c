/* hyocr download / hyocr models — fetch HunyuanOCR from the Hub (or a mirror) and list what
 * is installed. The download runs on a worker thread, as the app runs it, while the main
 * thread waits for Ctrl-C to cancel it cleanly (the partial folder stays for resuming). */
#include "cli.h"
#include "download.h"
#include "error.h"
#include "hyocr-build-config.h"

#include <glib/gi18n.h>

#include <glib-unix.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    hyocr_download *dl;
    GMainLoop      *loop;
    gboolean        tty;
    gboolean        bar_shown;
    int             last_tenth;     /* plain output: last 10 % step printed */
    const char     *version;
    gboolean        ok;
    GError         *error;
} download_job;

static char *fmt_eta(double s)
{
    if (s < 0 || s > 360000) return g_strdup("--:--");
    int t = (int)(s + 0.5);
    return t >= 3600 ? g_strdup_printf("%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60)
                     : g_strdup_printf("%d:%02d", t / 60, t % 60);
}

static char *progress_numbers(const hyocr_download_progress *p)
{
    g_autofree char *done = g_format_size((guint64)p->done), *total = g_format_size((guint64)p->total);
    g_autofree char *rate = p->rate > 0 ? g_format_size((guint64)p->rate) : g_strdup("—");
    g_autofree char *eta = fmt_eta(p->eta);
    int pct = p->total > 0 ? (int)(100 * p->done / p->total) : 0;
    /* Translators: percent done, bytes done / total, download rate per second, time left */
    return g_strdup_printf(_("%3d%%  %s / %s  %s/s  %s left"), pct, done, total, rate, eta);
}

static void clear_bar(download_job *job)
{
    if (job->tty && job->bar_shown) fputs("\r\033[K", stderr);
    job->bar_shown = FALSE;
}

static void draw_bar(download_job *job, const hyocr_download_progress *p)
{
    enum { WIDTH = 28 };
    int fill = p->total > 0 ? (int)(WIDTH * p->done / p->total) : 0;
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '-';
    bar[WIDTH] = '\0';
    g_autofree char *nums = progress_numbers(p);
    fprintf(stderr, "\r\033[K[%s] %s  %s", bar, nums, p->file ? p->file : "");
    fflush(stderr);
    job->bar_shown = TRUE;
}

/* A line above the bar (terminal) or on its own (pipe, log file). */
static void event_line(download_job *job, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void event_line(download_job *job, const char *fmt, ...)
{
    clear_bar(job);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

static void on_progress(const hyocr_download_progress *p, void *user_data)
{
    download_job *job = user_data;
    g_autofree char *size = p->file ? g_format_size((guint64)p->file_total) : NULL;
    switch (p->phase) {
    case HYOCR_DOWNLOAD_PHASE_LISTING:
    case HYOCR_DOWNLOAD_PHASE_DONE:
        return;
    case HYOCR_DOWNLOAD_PHASE_RESUMING: {
        g_autofree char *at = g_format_size((guint64)p->file_done);
        event_line(job, _("resuming %s at %s of %s"), p->file, at, size);
        return;
    }
    case HYOCR_DOWNLOAD_PHASE_VERIFIED:
        event_line(job, _("verified %s (%s)"), p->file, size);
        break;
    case HYOCR_DOWNLOAD_PHASE_WAITING:
        event_line(job, "%s", p->message);
        return;
    case HYOCR_DOWNLOAD_PHASE_INSTALLING:
        event_line(job, "%s", _("installing"));
        return;
    case HYOCR_DOWNLOAD_PHASE_FETCHING:
        break;
    }
    if (job->tty) {
        draw_bar(job, p);
    } else if (p->total > 0 && 10 * p->done / p->total > job->last_tenth) {
        job->last_tenth = (int)(10 * p->done / p->total);
        g_autofree char *nums = progress_numbers(p);
        fprintf(stderr, "%s\n", nums);
    }
}

static void print_plan(const hyocr_download_summary *s, const char *version)
{
    g_autofree char *total = g_format_size((guint64)s->total_bytes), *have = g_format_size((guint64)s->have_bytes);
    g_autofree char *avail = s->free_bytes >= 0 ? g_format_size((guint64)s->free_bytes) : g_strdup(_("unknown"));
    g_printerr(_("HunyuanOCR %s: %s%s%s at revision %s (commit %.12s) from %s\n"), version, s->repo,
               *s->subfolder ? "/" : "", s->subfolder, s->revision, s->commit, s->endpoint);
    g_printerr(g_dngettext(GETTEXT_PACKAGE, "%d file, %s", "%d files, %s", (gulong)s->n_files), s->n_files, total);
    if (s->have_bytes > 0) g_printerr(_(" (%s already downloaded)"), have);
    g_printerr(_(", %s free, into %s\n"), avail, s->dest_dir);
}

static gboolean quit_loop(gpointer loop)
{
    g_main_loop_quit(loop);
    return G_SOURCE_REMOVE;
}

static gpointer download_worker(gpointer data)
{
    download_job *job = data;
    const hyocr_download_summary *s = hyocr_download_plan(job->dl, &job->error);
    if (s) {
        print_plan(s, job->version);
        job->ok = hyocr_download_run(job->dl, &job->error);
    }
    clear_bar(job);
    g_idle_add(quit_loop, job->loop);
    return NULL;
}

static gboolean on_signal(gpointer data)
{
    download_job *job = data;
    hyocr_download_cancel(job->dl);
    return G_SOURCE_CONTINUE;
}

/* What to do, in this command's options, about the failures whose remedy is one
 * (the downloader says what failed; see download.h). */
static char *failure_hint(const hyocr_download_failure *f, const char *revision, const char *version)
{
    switch (f->kind) {
    case HYOCR_DOWNLOAD_FAILURE_NETWORK:
        return g_strdup(_("check your connection, or use --endpoint with a mirror"));
    case HYOCR_DOWNLOAD_FAILURE_NOT_FOUND:
        return g_strdup_printf(_("check --revision (“%s”) and --version (%s), or the mirror given with --endpoint"),
                               revision ? revision : "main", version);
    case HYOCR_DOWNLOAD_FAILURE_SERVER:
        return g_strdup(_("try again later, or use another --endpoint"));
    default:
        return NULL;
    }
}

static void print_failure(hyocr_download *dl, const GError *error, const char *revision, const char *version)
{
    g_autofree char *hint = failure_hint(hyocr_download_get_failure(dl), revision, version);
    const char *msg = error ? error->message : _("download failed");
    if (hint) g_printerr("hyocr: %s — %s\n", msg, hint);
    else g_printerr("hyocr: %s\n", msg);
}

static int download_usage(GOptionContext *ctx, const char *msg)
{
    g_printerr("hyocr: %s\n\n", msg);
    g_autofree char *help = g_option_context_get_help(ctx, TRUE, NULL);
    g_printerr("%s", help);
    return 2;
}

int hyocr_cmd_download(int argc, char **argv)
{
    g_autofree char *version = NULL, *revision = NULL, *endpoint = NULL, *repo = NULL;
    gboolean plan_only = FALSE;
    GOptionEntry entries[] = {
        { "version", 0, 0, G_OPTION_ARG_STRING, &version, N_("Model release: 1.5 (default) or 1.0"), "1.5|1.0" },
        { "revision", 0, 0, G_OPTION_ARG_STRING, &revision, N_("Branch, tag or commit (default main)"), "REV" },
        /* the defaults are spelled out because xgettext cannot see through macros */
        { "endpoint", 0, 0, G_OPTION_ARG_STRING, &endpoint,
          N_("Hub or mirror URL (default $HF_ENDPOINT, else https://huggingface.co)"), "URL" },
        { "repo", 0, 0, G_OPTION_ARG_STRING, &repo, N_("Repository (default tencent/HunyuanOCR)"), "OWNER/NAME" },
        { "dry-run", 'n', 0, G_OPTION_ARG_NONE, &plan_only, N_("Only list the files and sizes"), NULL },
        { NULL }
    };
    g_autoptr(GOptionContext) ctx = hyocr_cli_context_new(N_("[DIR] — download HunyuanOCR weights (resumes, verifies)"), entries);
    g_option_context_set_summary(ctx, N_("DIR defaults to $XDG_DATA_HOME/hyocr/models/HunyuanOCR-<version>.\n"
                                        "An interrupted download resumes when the same command runs again."));
    if (!hyocr_cli_parse(ctx, &argc, &argv)) return 2;
    g_autoptr(GError) error = NULL;
    if (argc > 2) return download_usage(ctx, _("give at most one destination folder"));
    hyocr_download_params p;
    hyocr_download_params_init(&p);
    if (version && !strcmp(version, "1.0")) p.version = HYOCR_MODEL_VERSION_1_0;
    else if (version && strcmp(version, "1.5")) return download_usage(ctx, _("--version must be 1.5 or 1.0"));
    p.revision = revision;
    p.endpoint = endpoint;
    p.repo = repo;
    p.dest_dir = argc == 2 ? argv[1] : NULL;

    const char *vname = p.version == HYOCR_MODEL_VERSION_1_0 ? "1.0" : "1.5";
    download_job job = { .tty = isatty(STDERR_FILENO), .version = vname };
    p.on_progress = on_progress;
    p.user_data = &job;
    g_autoptr(hyocr_download) dl = hyocr_download_new(&p, &error);
    if (!dl) {
        g_printerr("hyocr: %s\n", error->message);
        return 2;
    }
    job.dl = dl;
    if (plan_only) {
        const hyocr_download_summary *s = hyocr_download_plan(dl, &error);
        if (!s) {
            print_failure(dl, error, revision, vname);
            return 1;
        }
        print_plan(s, vname);
        for (int i = 0; i < s->n_files; i++)
            g_print("%12" G_GINT64_FORMAT "  %s  %s\n", s->files[i].size,
                    s->files[i].sha256 ? s->files[i].sha256 : s->files[i].git_oid ? s->files[i].git_oid : "-",
                    s->files[i].name);
        return 0;
    }
    g_printerr("%s\n\n", _(HYOCR_DOWNLOAD_LICENCE_NOTICE));
    job.loop = g_main_loop_new(NULL, FALSE);
    guint sigint = g_unix_signal_add(SIGINT, on_signal, &job);
    guint sigterm = g_unix_signal_add(SIGTERM, on_signal, &job);
    GThread *worker = g_thread_new("hyocr-download", download_worker, &job);
    g_main_loop_run(job.loop);
    g_thread_join(worker);
    g_source_remove(sigint);
    g_source_remove(sigterm);
    g_main_loop_unref(job.loop);
    if (!job.ok) {
        print_failure(dl, job.error, revision, vname);
        gboolean cancelled = g_error_matches(job.error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
        g_clear_error(&job.error);
        return cancelled ? 130 : 1;
    }
    const hyocr_download_summary *s = hyocr_download_plan(dl, NULL);
    g_print(_("HunyuanOCR %s (commit %.12s) is complete and verified in %s\n"), vname, s->commit, s->dest_dir);
    return 0;
}

/* ---------------------------------------------------------------- models */

static const char *status_text(const hyocr_model_entry *e)
{
    switch (e->state) {
    case HYOCR_MODEL_STATE_VERIFIED:
        return e->rehashed ? _("complete, verified (rehashed now)") : _("complete, verified");
    case HYOCR_MODEL_STATE_CHANGED:    return _("complete, changed since verification");
    case HYOCR_MODEL_STATE_CORRUPT:    return _("CORRUPT");
    case HYOCR_MODEL_STATE_INCOMPLETE: return _("incomplete");
    case HYOCR_MODEL_STATE_UNMANAGED:  return _("not verified (not downloaded by hyocr)");
    }
    return "?";
}

static void print_entry(const hyocr_model_entry *e)
{
    g_autofree char *size = g_format_size((guint64)e->size);
    g_print("%-20s %-4s %-38s %10s", e->name, e->version ? e->version : "?", status_text(e), size);
    if (e->revision) g_print("  %s @ %.12s", e->revision, e->commit ? e->commit : "?");
    g_print("\n    %s\n", e->dir);
    if (e->problem && e->state != HYOCR_MODEL_STATE_VERIFIED) g_print("    %s\n", e->problem);
    if (e->state == HYOCR_MODEL_STATE_CHANGED && !e->rehashed)
        g_print("%s\n", _("    hyocr models --verify rehashes the files to tell whether they are intact"));
    if (e->partial_bytes > 0 && e->state != HYOCR_MODEL_STATE_INCOMPLETE) {
        g_autofree char *pb = g_format_size((guint64)e->partial_bytes);
        g_print(_("    an unfinished update (%s) waits in %s.partial — run the download again to resume\n"), pb, e->dir);
    }
}

static gboolean is_model_dir(const char *dir)
{
    static const char *const marks[] = { HYOCR_DOWNLOAD_MANIFEST, "config.json" };
    for (size_t i = 0; i < G_N_ELEMENTS(marks); i++) {
        g_autofree char *p = g_build_filename(dir, marks[i], NULL);
        if (g_file_test(p, G_FILE_TEST_EXISTS)) return TRUE;
    }
    g_autofree char *partial = g_strconcat(dir, ".partial", NULL);
    return g_file_test(partial, G_FILE_TEST_IS_DIR);
}

int hyocr_cmd_models(int argc, char **argv)
{
    gboolean verify = FALSE;
    GOptionEntry entries[] = {
        { "verify", 0, 0, G_OPTION_ARG_NONE, &verify, N_("Rehash every file against its recorded checksum"), NULL },
        { NULL }
    };
    g_autoptr(GOptionContext) ctx = hyocr_cli_context_new(N_("[DIR…] — list installed models and their state"), entries);
    g_option_context_set_summary(ctx, N_("Without DIR, lists $XDG_DATA_HOME/hyocr/models. A DIR may be a model "
                                        "folder or a folder of models."));
    if (!hyocr_cli_parse(ctx, &argc, &argv)) return 2;
    g_autoptr(GError) error = NULL;
    g_autofree char *default_root = hyocr_models_dir();
    char *fallback[] = { default_root, NULL };
    char **dirs = argc > 1 ? argv + 1 : fallback;
    int shown = 0, bad = 0;
    for (int i = 0; dirs[i]; i++) {
        g_autoptr(GPtrArray) entries_found = g_ptr_array_new_with_free_func((GDestroyNotify)hyocr_model_entry_free);
        if (is_model_dir(dirs[i])) {
            hyocr_model_entry *e = hyocr_model_check(dirs[i], verify, &error);
            if (!e) {
                g_printerr("hyocr: %s\n", error->message);
                return 1;
            }
            g_ptr_array_add(entries_found, e);
        } else {
            GPtrArray *found = hyocr_models_scan(dirs[i], verify, &error);
            if (!found) {
                g_printerr("hyocr: %s: %s\n", dirs[i], error->message);
                return 1;
            }
            g_ptr_array_extend_and_steal(entries_found, found);
        }
        for (guint j = 0; j < entries_found->len; j++) {
            const hyocr_model_entry *e = g_ptr_array_index(entries_found, j);
            print_entry(e);
            shown++;
            bad += e->state != HYOCR_MODEL_STATE_VERIFIED;
        }
    }
    if (!shown) {
        g_print(_("no models in %s — get one with: hyocr download\n"), argc > 1 ? argv[1] : default_root);
        return 0;
    }
    return verify && bad ? 1 : 0;
}
