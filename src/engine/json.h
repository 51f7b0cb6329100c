/* hyocr — the one door every JSON text we read goes through (config files,
 * tokenizer.json, safetensors headers and indexes, the Hub's replies, model
 * answers, request bodies).
 *
 * json-glib 1.6 parses recursively, so a few hundred kilobytes of '[' overflow
 * the stack; and it accepts a second value after the first ("{…}{…}"), which
 * it then leaks. A cheap lexical pre-scan bounds the nesting depth and finds
 * the end of the first value before json-glib sees the text. */
#pragma once
#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

/* Deeper than any file we read (tokenizer.json nests 6 levels), shallow enough
 * for json-glib's recursion on a small thread stack under AddressSanitizer. */
#define HYOCR_JSON_MAX_DEPTH 128

/* Checks that data holds at most one JSON value nested at most max_depth
 * levels, followed only by white space. Lexical only: what it lets through
 * may still be malformed. The message, without a name, says what and at which
 * byte offset, e.g. "trailing data after the JSON value at byte 14". */
bool hyocr_json_check(const char *data, size_t len, int max_depth, GError **error);

/* hyocr_json_check with max_depth, then json-glib. Returns the root (never a
 * NULL root: empty text is an error), or NULL with HYOCR_ERROR_PARSE and a
 * message starting "NAME: " (NAME:LINE:COL: for json-glib's own errors); name
 * may be NULL for a message without it ("LINE:COL: …"). */
JsonNode *hyocr_json_parse(const char *data, size_t len, int max_depth, const char *name, GError **error);

/* A JSON file read whole and parsed: its root, or NULL with HYOCR_ERROR_IO ("PATH: cannot
 * read: …") or hyocr_json_parse's HYOCR_ERROR_PARSE, to which the caller adds its advice. */
JsonNode *hyocr_json_read_file(const char *path, GError **error);

/* A file holding one JSON object: the object (a new reference), or NULL when the
 * file is missing, unreadable or holds anything else. For files we wrote
 * ourselves (the download record), where a bad one only means "start over". */
JsonObject *hyocr_json_load_object(const char *path);
/* A member's value, when it has that type: the string (NULL otherwise) or the
 * integer (-1 otherwise). o may be NULL. */
const char *hyocr_json_str(JsonObject *o, const char *key);
int64_t     hyocr_json_int(JsonObject *o, const char *key);

/* What we write: root as JSON text (pretty: indented). json-glib 1.6 stops escaping control
 * characters once a string has had a non-ASCII one, and model answers do hold control bytes;
 * what it leaves raw inside strings is escaped here, and the ".0" it appends to a double with an
 * exponent ("1e+30.0") is dropped, so the text is always valid JSON. A 0xFF
 * byte, which no UTF-8 text holds, is written as \u0000: how a writer passes a NUL byte of a
 * model's answer through json-glib's C strings. */
char *hyocr_json_to_data(JsonNode *root, bool pretty);
/* A string value of len bytes that may hold NUL bytes (a model's answer): they go
 * in as 0xFF, written \u0000 by hyocr_json_to_data. Every other string added
 * must be valid UTF-8 (which never holds 0xFF). */
void  hyocr_json_add_text(JsonBuilder *b, const char *text, size_t len);
/* A member of the object being built: "name": v. */
void  hyocr_json_member_str(JsonBuilder *b, const char *name, const char *v);
void  hyocr_json_member_int(JsonBuilder *b, const char *name, gint64 v);

G_END_DECLS
