/* hyocr-gtk — the history file: open, migrate, set aside, insert, query, delete. */
#include "hyocr-history.h"
#include "error.h"
#include "hyocr-build-config.h"
#include <errno.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <sqlite3.h>

/* Long enough for another writer's commit, short enough that a file some other
 * program holds locked is set aside at start rather than freezing the window. */
#define BUSY_TIMEOUT_MS 2000

struct hyocr_history {
    sqlite3 *db;
    char    *path;
    int      n_interrupted;
};

static const char *const state_names[] = { "queued", "done", "failed", "cancelled", "interrupted" };

const char *hyocr_history_state_name(hyocr_history_state state)
{
    return (guint)state < G_N_ELEMENTS(state_names) ? state_names[state] : "queued";
}

static hyocr_history_state state_from_name(const char *name)
{
    for (guint i = 0; i < G_N_ELEMENTS(state_names); i++)
        if (name && g_str_equal(name, state_names[i])) return (hyocr_history_state)i;
    return HYOCR_HISTORY_INTERRUPTED;   /* a state this version does not know ended somehow */
}

/* Each step takes the file from version i to i + 1, in one transaction. A new
 * file goes through all of them: the path from version 1 is the one every file takes. */
static const char *const migrations[HYOCR_HISTORY_VERSION] = {
    /* 1: the jobs, their source, task and result */
    "CREATE TABLE jobs ("
    "  id INTEGER PRIMARY KEY,"
    "  created INTEGER NOT NULL,"
    "  finished INTEGER NOT NULL DEFAULT 0,"
    "  state TEXT NOT NULL,"
    "  title TEXT NOT NULL,"
    "  path TEXT,"
    "  page INTEGER NOT NULL DEFAULT 0,"
    "  image BLOB,"
    "  preset TEXT NOT NULL,"
    "  options TEXT NOT NULL,"
    "  text TEXT NOT NULL DEFAULT '',"
    "  error TEXT);",
    /* 2: what is needed to judge and reproduce a result: boxes, why it stopped,
     * timings, the engine and model; newest first without a sort of the table */
    "ALTER TABLE jobs ADD COLUMN boxes TEXT;"
    "ALTER TABLE jobs ADD COLUMN stop_reason TEXT;"
    "ALTER TABLE jobs ADD COLUMN timings TEXT;"
    "ALTER TABLE jobs ADD COLUMN n_tokens INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN engine TEXT;"
    "ALTER TABLE jobs ADD COLUMN model TEXT;"
    "CREATE INDEX jobs_created ON jobs (created);",
};

/* ---- entries ---- */

hyocr_history_entry *hyocr_history_entry_new(void)
{
    return g_new0(hyocr_history_entry, 1);
}

void hyocr_history_entry_free(hyocr_history_entry *e)
{
    if (!e) return;
    g_free(e->title);
    g_free(e->path);
    g_clear_pointer(&e->image, g_bytes_unref);
    g_free(e->preset);
    g_free(e->options);
    g_free(e->text);
    g_free(e->boxes);
    g_free(e->error);
    g_free(e->stop_reason);
    g_free(e->timings);
    g_free(e->engine);
    g_free(e->model);
    g_free(e);
}

char *hyocr_history_entry_describe(const hyocr_history_entry *e)
{
    GString *s = g_string_new(NULL);
    g_autoptr(GDateTime) when = g_date_time_new_from_unix_local(e->created / G_USEC_PER_SEC);
    g_autofree char *date = when ? g_date_time_format_iso8601(when) : g_strdup("?");
    g_string_append_printf(s, "hyocr %s\n", HYOCR_VERSION);
    g_string_append_printf(s, _("Job: %s (%s)\n"), e->title, hyocr_history_state_name(e->state));
    if (e->path) g_string_append_printf(s, _("Source: %s, page %d\n"), e->path, e->page + 1);
    else g_string_append(s, _("Source: a pasted or captured image (kept in the history)\n"));
    g_string_append_printf(s, _("Queued: %s\n"), date);
    g_string_append_printf(s, _("Preset: %s\nOptions: %s\n"), e->preset, e->options);
    g_string_append_printf(s, _("Engine: %s\nModel: %s\n"), e->engine ? e->engine : "-", e->model ? e->model : "-");
    if (e->stop_reason) g_string_append_printf(s, _("Stopped by: %s after %d tokens\n"), e->stop_reason, e->n_tokens);
    if (e->timings) g_string_append_printf(s, _("Timings: %s\n"), e->timings);
    if (e->error) g_string_append_printf(s, _("Error: %s\n"), e->error);
    return g_string_free(s, FALSE);
}

/* ---- opening ---- */

static gboolean fail(sqlite3 *db, int rc, GError **error, const char *what)
{
    g_set_error(error, HYOCR_ERROR, rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? HYOCR_ERROR_BUSY : HYOCR_ERROR_IO,
                "%s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    return FALSE;
}

static gboolean exec(sqlite3 *db, const char *sql, GError **error)
{
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK || fail(db, rc, error, sql);
}

static gboolean query_int(sqlite3 *db, const char *sql, int *out, GError **error)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *out = sqlite3_column_int(st, 0);
    if (rc != SQLITE_ROW) fail(db, rc, error, sql);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW;
}

/* PRAGMA quick_check: a damaged page is found now, not in the middle of a write later. */
static gboolean check_intact(sqlite3 *db, GError **error)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    gboolean ok = rc == SQLITE_ROW && g_strcmp0((const char *)sqlite3_column_text(st, 0), "ok") == 0;
    if (rc == SQLITE_ROW && !ok)
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE, _("the file is damaged (%s)"), sqlite3_column_text(st, 0));
    else if (rc != SQLITE_ROW)   /* the first read of the file: its own words ("file is not a database") */
        g_set_error_literal(error, HYOCR_ERROR, rc == SQLITE_BUSY ? HYOCR_ERROR_BUSY : HYOCR_ERROR_IO,
                            sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return ok;
}

static gboolean migrate(sqlite3 *db, int from, GError **error)
{
    for (int v = from; v < HYOCR_HISTORY_VERSION; v++) {
        g_autofree char *sql = g_strdup_printf("BEGIN IMMEDIATE; %s PRAGMA user_version = %d; COMMIT;",
                                               migrations[v], v + 1);
        if (!exec(db, sql, error)) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return FALSE;
        }
    }
    return TRUE;
}

/* Set when the file is from a newer app: it is left alone, not set aside. */
#define NEWER_FILE 1

static sqlite3 *open_db(const char *path, int *why, GError **error)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc != SQLITE_OK) {
        fail(db, rc, error, path);
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
    int version = 0;
    /* WAL: a reader never waits for the writer. synchronous=FULL: a job stored is on
     * the disk before the next starts, whatever ends the process. */
    if (!check_intact(db, error) || !exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA secure_delete = ON;", error) ||
        !query_int(db, "PRAGMA user_version", &version, error))
        goto bad;
    if (version > HYOCR_HISTORY_VERSION) {
        *why = NEWER_FILE;
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                    _("%s was written by a newer version of hyocr (history version %d; this one reads up to %d)"),
                    path, version, HYOCR_HISTORY_VERSION);
        goto bad;
    }
    if (!migrate(db, version, error)) goto bad;
    return db;
bad:
    sqlite3_close(db);
    return NULL;
}

/* The file and its WAL and shared-memory companions go to PATH.broken-DATE. */
static char *set_aside(const char *path)
{
    g_autoptr(GDateTime) now = g_date_time_new_now_local();
    g_autofree char *stamp = g_date_time_format(now, "%Y%m%d-%H%M%S");
    char *aside = g_strdup_printf("%s.broken-%s", path, stamp);
    for (int i = 2; g_file_test(aside, G_FILE_TEST_EXISTS); i++) {
        g_free(aside);
        aside = g_strdup_printf("%s.broken-%s-%d", path, stamp, i);
    }
    if (g_rename(path, aside) != 0) {
        g_free(aside);
        return NULL;
    }
    static const char *const companions[] = { "-wal", "-shm" };
    for (guint i = 0; i < G_N_ELEMENTS(companions); i++) {
        g_autofree char *from = g_strconcat(path, companions[i], NULL);
        g_autofree char *to = g_strconcat(aside, companions[i], NULL);
        if (g_file_test(from, G_FILE_TEST_EXISTS)) g_rename(from, to);
    }
    return aside;
}

char *hyocr_history_default_path(void)
{
    return g_build_filename(g_get_user_data_dir(), "hyocr", "history.db", NULL);
}

static int mark_interrupted(sqlite3 *db)
{
    if (sqlite3_exec(db, "UPDATE jobs SET state = 'interrupted' WHERE state = 'queued'", NULL, NULL, NULL) != SQLITE_OK)
        return 0;
    return sqlite3_changes(db);
}

hyocr_history *hyocr_history_open(const char *path, char **notice, GError **error)
{
    g_return_val_if_fail(path, NULL);
    if (notice) *notice = NULL;
    g_autofree char *dir = g_path_get_dirname(path);
    if (g_mkdir_with_parents(dir, 0700) != 0) {
        int err = errno;
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("cannot create %s: %s"), dir, g_strerror(err));
        return NULL;
    }
    int why = 0;
    g_autoptr(GError) first = NULL;
    sqlite3 *db = open_db(path, &why, &first);
    if (!db && why == NEWER_FILE) {
        g_propagate_error(error, g_steal_pointer(&first));
        return NULL;
    }
    if (!db) {
        g_autofree char *aside = set_aside(path);
        if (!aside) {
            g_propagate_error(error, g_steal_pointer(&first));
            return NULL;
        }
        if (notice)
            *notice = g_strdup_printf(_("The history could not be read (%s). It was moved to %s and a new one "
                                        "was started."), first->message, aside);
        db = open_db(path, &why, error);
        if (!db) return NULL;
    }
    hyocr_history *h = g_new0(hyocr_history, 1);
    h->db = db;
    h->path = g_strdup(path);
    h->n_interrupted = mark_interrupted(db);
    return h;
}

void hyocr_history_free(hyocr_history *h)
{
    if (!h) return;
    sqlite3_close(h->db);
    g_free(h->path);
    g_free(h);
}

const char *hyocr_history_get_path(hyocr_history *h) { return h->path; }
int hyocr_history_get_n_interrupted(hyocr_history *h) { return h->n_interrupted; }

/* ---- rows ---- */

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s) sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, i);
}

static gboolean step_done(hyocr_history *h, sqlite3_stmt *st, GError **error, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || fail(h->db, rc, error, what);
}

static gboolean prepare(hyocr_history *h, const char *sql, sqlite3_stmt **st, GError **error)
{
    int rc = sqlite3_prepare_v2(h->db, sql, -1, st, NULL);
    return rc == SQLITE_OK || fail(h->db, rc, error, sql);
}

gboolean hyocr_history_add(hyocr_history *h, hyocr_history_entry *e, GError **error)
{
    sqlite3_stmt *st;
    if (!prepare(h, "INSERT INTO jobs (created, finished, state, title, path, page, image, preset, options, text) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", &st, error))
        return FALSE;
    sqlite3_bind_int64(st, 1, e->created);
    sqlite3_bind_int64(st, 2, e->finished);
    bind_text(st, 3, hyocr_history_state_name(e->state));
    bind_text(st, 4, e->title ? e->title : "");
    bind_text(st, 5, e->path);
    sqlite3_bind_int(st, 6, e->page);
    gsize n = 0;
    const void *png = e->image ? g_bytes_get_data(e->image, &n) : NULL;
    if (png) sqlite3_bind_blob64(st, 7, png, n, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, 7);
    bind_text(st, 8, e->preset ? e->preset : "");
    bind_text(st, 9, e->options ? e->options : "{}");
    bind_text(st, 10, e->text ? e->text : "");
    if (!step_done(h, st, error, "INSERT")) return FALSE;
    e->id = sqlite3_last_insert_rowid(h->db);
    return TRUE;
}

gboolean hyocr_history_finish(hyocr_history *h, const hyocr_history_entry *e, GError **error)
{
    sqlite3_stmt *st;
    if (!prepare(h, "UPDATE jobs SET state = ?, finished = ?, text = ?, boxes = ?, error = ?, stop_reason = ?, "
                    "timings = ?, n_tokens = ?, engine = ?, model = ? WHERE id = ?", &st, error))
        return FALSE;
    bind_text(st, 1, hyocr_history_state_name(e->state));
    sqlite3_bind_int64(st, 2, e->finished);
    bind_text(st, 3, e->text ? e->text : "");
    bind_text(st, 4, e->boxes);
    bind_text(st, 5, e->error);
    bind_text(st, 6, e->stop_reason);
    bind_text(st, 7, e->timings);
    sqlite3_bind_int(st, 8, e->n_tokens);
    bind_text(st, 9, e->engine);
    bind_text(st, 10, e->model);
    sqlite3_bind_int64(st, 11, e->id);
    return step_done(h, st, error, "UPDATE");
}

#define COLUMNS "id, created, finished, state, title, path, page, preset, options, text, boxes, error, " \
                "stop_reason, timings, n_tokens, engine, model"

static char *column_text(sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    return s ? g_strdup((const char *)s) : NULL;
}

static hyocr_history_entry *read_row(sqlite3_stmt *st)
{
    hyocr_history_entry *e = hyocr_history_entry_new();
    e->id = sqlite3_column_int64(st, 0);
    e->created = sqlite3_column_int64(st, 1);
    e->finished = sqlite3_column_int64(st, 2);
    e->state = state_from_name((const char *)sqlite3_column_text(st, 3));
    e->title = column_text(st, 4);
    e->path = column_text(st, 5);
    e->page = sqlite3_column_int(st, 6);
    e->preset = column_text(st, 7);
    e->options = column_text(st, 8);
    e->text = column_text(st, 9);
    e->boxes = column_text(st, 10);
    e->error = column_text(st, 11);
    e->stop_reason = column_text(st, 12);
    e->timings = column_text(st, 13);
    e->n_tokens = sqlite3_column_int(st, 14);
    e->engine = column_text(st, 15);
    e->model = column_text(st, 16);
    if (!e->title) e->title = g_strdup("");
    if (!e->text) e->text = g_strdup("");
    return e;
}

/* LIKE's wildcards in what the user typed match themselves. */
static char *like_pattern(const char *search)
{
    GString *s = g_string_new("%");
    for (const char *p = search; *p; p++) {
        if (*p == '%' || *p == '_' || *p == '\\') g_string_append_c(s, '\\');
        g_string_append_c(s, *p);
    }
    g_string_append_c(s, '%');
    return g_string_free(s, FALSE);
}

GPtrArray *hyocr_history_query(hyocr_history *h, const char *search, int limit, GError **error)
{
    gboolean filter = search && *search;
    g_autofree char *sql = g_strdup_printf("SELECT " COLUMNS " FROM jobs %s ORDER BY created DESC, id DESC LIMIT %d",
                                           filter ? "WHERE text LIKE ?1 ESCAPE '\\' OR title LIKE ?1 ESCAPE '\\' "
                                                    "OR error LIKE ?1 ESCAPE '\\'" : "",
                                           limit > 0 ? limit : -1);
    sqlite3_stmt *st;
    if (!prepare(h, sql, &st, error)) return NULL;
    g_autofree char *pattern = filter ? like_pattern(search) : NULL;
    if (filter) bind_text(st, 1, pattern);
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)hyocr_history_entry_free);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) g_ptr_array_add(out, read_row(st));
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        fail(h->db, rc, error, "SELECT");
        g_ptr_array_unref(out);
        return NULL;
    }
    return out;
}

hyocr_history_entry *hyocr_history_get(hyocr_history *h, gint64 id, GError **error)
{
    sqlite3_stmt *st;
    if (!prepare(h, "SELECT " COLUMNS ", image FROM jobs WHERE id = ?", &st, error)) return NULL;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    hyocr_history_entry *e = NULL;
    if (rc == SQLITE_ROW) {
        e = read_row(st);
        const void *png = sqlite3_column_blob(st, 17);
        if (png) e->image = g_bytes_new(png, (gsize)sqlite3_column_bytes(st, 17));
    } else if (rc == SQLITE_DONE) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("history entry %lld is gone"), (long long)id);
    } else {
        fail(h->db, rc, error, "SELECT");
    }
    sqlite3_finalize(st);
    return e;
}

gboolean hyocr_history_delete(hyocr_history *h, gint64 id, GError **error)
{
    sqlite3_stmt *st;
    if (!prepare(h, "DELETE FROM jobs WHERE id = ?", &st, error)) return FALSE;
    sqlite3_bind_int64(st, 1, id);
    return step_done(h, st, error, "DELETE");
}

gboolean hyocr_history_clear(hyocr_history *h, GError **error)
{
    /* VACUUM: what was cleared for privacy does not stay in the file's free pages. */
    return exec(h->db, "DELETE FROM jobs", error) && exec(h->db, "VACUUM", error);
}
