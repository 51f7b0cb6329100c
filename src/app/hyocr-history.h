/* hyocr-gtk — the history of jobs: a SQLite file ($XDG_DATA_HOME/hyocr/history.db)
 * that keeps every job the app ran, one row each, written when the job is queued
 * and again when it ends, so a crash or kill -9 loses no finished result.
 *
 * No GTK here: the window turns its jobs into entries (hyocr-window-history.c) and
 * the history view shows them. Every call is made on one thread (the main one). */
#pragma once
#include <gio/gio.h>

G_BEGIN_DECLS

/* The version this app writes (PRAGMA user_version); older files are migrated. */
#define HYOCR_HISTORY_VERSION 2

typedef enum {
    HYOCR_HISTORY_QUEUED,        /* queued or running: not ended yet */
    HYOCR_HISTORY_DONE,
    HYOCR_HISTORY_FAILED,
    HYOCR_HISTORY_CANCELLED,
    HYOCR_HISTORY_INTERRUPTED,   /* it was queued or running when the app died */
} hyocr_history_state;

const char *hyocr_history_state_name(hyocr_history_state state);   /* "done", … as stored */

typedef struct {
    gint64              id;         /* 0 before it is added */
    gint64              created;    /* g_get_real_time() when queued */
    gint64              finished;   /* when it ended, 0 while queued */
    hyocr_history_state state;
    char               *title;      /* the file's name, "Pasted image", … */
    char               *path;       /* the source file, NULL for a pasted or captured image */
    int                 page;       /* 0-based page of a document */
    GBytes             *image;      /* a pasted or captured image, PNG; NULL for a file */
    char               *preset;     /* the preset's nick */
    char               *options;    /* the task and its options, JSON */
    char               *text;       /* the result ("" while queued) */
    char               *boxes;      /* spotting: the lines and boxes, JSON; else NULL */
    char               *error;      /* why it failed or was cancelled */
    char               *stop_reason;/* "eos", "max_new_tokens", … (hyocr_stop_reason_name) */
    char               *timings;    /* the engine's timings, JSON */
    int                 n_tokens;
    char               *engine;     /* "CPU", "GPU" */
    char               *model;      /* the model folder */
} hyocr_history_entry;

hyocr_history_entry *hyocr_history_entry_new(void);
void                 hyocr_history_entry_free(hyocr_history_entry *e);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_history_entry, hyocr_history_entry_free)
/* A summary to paste into a bug report: what ran, on what, and how it ended. */
char                *hyocr_history_entry_describe(const hyocr_history_entry *e);

typedef struct hyocr_history hyocr_history;

/* $XDG_DATA_HOME/hyocr/history.db */
char          *hyocr_history_default_path(void);
/* Opens (creates, migrates) the file and marks the jobs a previous run left queued
 * as interrupted. A file that is not a database, is damaged or stays locked is moved
 * aside (*notice then says where) and a new one is started; NULL with error only
 * when even that fails, or the file is from a newer version of the app (left as it is). */
hyocr_history *hyocr_history_open(const char *path, char **notice, GError **error);
void           hyocr_history_free(hyocr_history *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_history, hyocr_history_free)
const char    *hyocr_history_get_path(hyocr_history *h);
/* Jobs marked interrupted by this open. */
int            hyocr_history_get_n_interrupted(hyocr_history *h);

/* Stores a new entry (e->id is set). */
gboolean       hyocr_history_add(hyocr_history *h, hyocr_history_entry *e, GError **error);
/* Stores how the entry e->id ended: state, finished, text, boxes, error, stop reason,
 * timings, tokens, engine and model. */
gboolean       hyocr_history_finish(hyocr_history *h, const hyocr_history_entry *e, GError **error);
/* The newest entries first, at most limit (0: all), those whose text, title or
 * error holds search (any case) when search is not empty; without their images. */
GPtrArray     *hyocr_history_query(hyocr_history *h, const char *search, int limit, GError **error);
/* One entry with its image; NULL with error when there is none. */
hyocr_history_entry *hyocr_history_get(hyocr_history *h, gint64 id, GError **error);
gboolean       hyocr_history_delete(hyocr_history *h, gint64 id, GError **error);
gboolean       hyocr_history_clear(hyocr_history *h, GError **error);

G_END_DECLS
