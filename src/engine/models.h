/* hyocr — the installed models: where they live and which are complete.
 *
 * Models live in $XDG_DATA_HOME/hyocr/models/HunyuanOCR-<version> unless the user
 * chose another folder. A folder the downloader (download.h) filled holds its
 * record (HYOCR_DOWNLOAD_MANIFEST): every file with its size, checksums and time
 * as verified. An interrupted download waits beside it in "<folder>.partial"
 * with its state (HYOCR_MODELS_PARTIAL_STATE). This reads them, locally and
 * without the network; the downloader writes them. No global state. */
#pragma once
#include "config.h"
#include <gio/gio.h>
#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

#define HYOCR_DOWNLOAD_MANIFEST    ".hyocr-download.json"
#define HYOCR_MODELS_PARTIAL_STATE ".hyocr-partial.json"

/* $XDG_DATA_HOME/hyocr/models */
char   *hyocr_models_dir(void);
/* Where a version goes inside parent (NULL: hyocr_models_dir()): …/HunyuanOCR-1.5 or …/HunyuanOCR-1.0. */
char   *hyocr_models_dest(const char *parent, hyocr_model_version version);
/* The files a checkpoint folder lacks to load: "config.json", "tokenizer.json",
 * "*.safetensors" (any weights file), in that order; an empty vector when none. */
char  **hyocr_models_missing_files(const char *dir);
/* The model folder to use when none was chosen: the first complete one of
 * HunyuanOCR-1.5, HunyuanOCR-1.0 and the legacy HunyuanOCR in hyocr_models_dir();
 * else the first that exists; else where HunyuanOCR-1.5 would go. */
char   *hyocr_models_default_folder(void);
/* Free bytes on the file system that holds path, or would hold it (that of its
 * nearest existing parent); -1 when unknown. */
int64_t hyocr_models_free_space(const char *path);

typedef enum {
    HYOCR_MODEL_STATE_VERIFIED,     /* manifest present, files unchanged since verification */
    HYOCR_MODEL_STATE_CHANGED,      /* a file's size or time differs from the manifest (rehash to know more) */
    HYOCR_MODEL_STATE_CORRUPT,      /* rehash found a mismatch */
    HYOCR_MODEL_STATE_INCOMPLETE,   /* files missing, or only an interrupted download */
    HYOCR_MODEL_STATE_UNMANAGED,    /* a checkpoint folder hyocr did not download */
} hyocr_model_state;

typedef struct {
    char   *dir;
    char   *name;          /* folder name */
    char   *version;       /* "1.5", "1.0" or NULL when unknown */
    char   *repo, *revision, *commit, *endpoint, *verified_at;   /* from the manifest, may be NULL */
    int64_t size;          /* bytes of the model's files on disk */
    int     n_files;
    hyocr_model_state state;
    bool    rehashed;      /* state comes from a full rehash */
    char   *problem;       /* first problem found, translated; NULL when none */
    int64_t partial_bytes; /* bytes in an interrupted download beside it ("<dir>.partial") */
} hyocr_model_entry;

void hyocr_model_entry_free(hyocr_model_entry *e);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_model_entry, hyocr_model_entry_free)

/* Describes one model folder (or the partial download of one). rehash re-reads every file
 * and compares with the manifest's checksums (seconds for 2 GB). */
hyocr_model_entry *hyocr_model_check(const char *dir, gboolean rehash, GError **error);
/* Entries for the sub-folders of root (hyocr_models_dir() when NULL) that hold a model,
 * a manifest or an interrupted download; sorted by name. Missing root → empty array. */
GPtrArray *hyocr_models_scan(const char *root, gboolean rehash, GError **error);

/* ---- for the downloader, which writes what the above reads */

/* A file's entry ("name" = name) in a record's or state's "files", or NULL. */
JsonObject *hyocr_models_record_file(JsonObject *record, const char *name);
/* A regular file's size, -1 for anything else. */
int64_t     hyocr_models_file_size(const char *path);

G_END_DECLS
