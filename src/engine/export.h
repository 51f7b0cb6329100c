/* hyocr — exports: the pages' results written back as one document, in the format its file
 * name says. Used by `hyocr run --output` and the app's "Save as…".
 *
 *   .txt   the pages' text in order, each under a "==> name, page N <==" line
 *   .md    the same as Markdown (parse-document output as is), pages between rules
 *   .json  one object: the model, the engine, and per page the text, task, timings and the
 *          spotting lines with boxes in the model's 0…1000 scale and in pixels of the
 *          original page (and PDF points for a PDF page)
 *   .jsonl the same pages, one object per line
 *   .pdf   searchable: the original pages (a PDF's own page content, else the image) with the
 *          spotted text as an invisible layer at its boxes (cairo), so selecting, copying and
 *          searching work and pdftotext finds it
 *   .html  parse-document results as a web page: tables stay tables, formulas stay LaTeX
 *          between MathJax's delimiters; nothing remote is loaded
 *
 * Pages are written one at a time: a long document costs the memory of its largest page. */
#pragma once
#include "document.h"
#include "hyocr.h"
#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>

G_BEGIN_DECLS

typedef enum {
    HYOCR_EXPORT_TEXT,
    HYOCR_EXPORT_MARKDOWN,
    HYOCR_EXPORT_JSON,
    HYOCR_EXPORT_JSONL,
    HYOCR_EXPORT_PDF,
    HYOCR_EXPORT_HTML,
    HYOCR_EXPORT_COUNT,
} hyocr_export_format;

typedef struct {
    hyocr_document      *document;    /* where the page comes from (not taken over) */
    int                  page;        /* 0-based */
    hyocr_task           task;
    const char          *text;        /* the answer; NULL when the page failed */
    const char          *error;       /* why the page failed, or NULL */
    const hyocr_timings *timings;     /* NULL: none recorded */
    int                  image_width, image_height;   /* the image the model saw (0: unknown) */
} hyocr_export_page;

typedef struct {
    const hyocr_export_page *pages;
    int                      n_pages;
    const char              *model;     /* the checkpoint that answered (its folder) */
    const char              *backend;   /* "cpu", "cuda" */
} hyocr_export;

/* The format a file name asks for (its extension, any case); false when none. */
bool        hyocr_export_format_for_path(const char *path, hyocr_export_format *out);
/* ".txt, .md, .json, .jsonl, .pdf, .html" (the extensions this build writes). */
const char *hyocr_export_extensions(void);
/* Whether the task answers in Markdown (the .html export renders it; others are shown as text). */
bool        hyocr_export_is_markdown(hyocr_task task);
/* A parse-document answer (Markdown with HTML tables and LaTeX) as the HTML the .html export
 * writes for it (md4c; formulas between \( \) and \[ \]); raw HTML in it is kept, so
 * whoever shows it forbids scripts. NULL when this build has no md4c. */
char       *hyocr_export_markdown_html(const char *markdown);
/* A "timings" member (milliseconds, decode tokens/s) into the object b is building: the one
 * shape of a job's timings in every JSON we write (exports, hyocr run --format json). */
void        hyocr_export_add_timings(JsonBuilder *b, const hyocr_timings *t);
/* Writes the whole file or nothing (a temporary file renamed into place). */
bool        hyocr_export_write(const hyocr_export *ex, hyocr_export_format format, const char *path, GError **error);

G_END_DECLS
