/* hyocr; safetensors reader.
 *
 * File layout: u64 little-endian header length N, N bytes of JSON, then the data section.
 * The JSON maps tensor names to {dtype, shape, data_offsets: [begin, end]} (offsets relative to
 * the data section) plus an optional "__metadata__" object, which we ignore.
 * Every header value is untrusted: lengths, offsets and shapes are checked (overflow-safe)
 * before any pointer into the mapping is formed. */
#include "safetensors.h"
#include "error.h"
#include "json.h"
#include "i18n.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_LIMIT ((uint64_t)100 * 1024 * 1024)

typedef struct {
    char   *path;
    void   *map;
    size_t  size;
} st_file;

/* A tensor of a known dtype hyocr does not compute with. */
typedef struct {
    char       *name;
    char       *dtype;
    const char *file;
} st_other;

struct hyocr_safetensors {
    GPtrArray  *files;     /* st_file*, owned */
    GPtrArray  *tensors;   /* hyocr_tensor*, owned */
    GPtrArray  *others;    /* st_other*, owned */
    GHashTable *by_name;   /* name → hyocr_tensor* or st_other* (see is_other) */
    GHashTable *is_other;  /* names of st_other entries */
};

/* ------------------------------------------------------------------ dtypes */

typedef struct {
    const char *name;
    int         bits;
    int         dtype;     /* hyocr_dtype, or -1 when hyocr cannot use it */
} dtype_info;

/* The safetensors dtype list; sub-byte float formats are stored packed. */
static const dtype_info DTYPES[] = {
    { "F32", 32, HYOCR_DTYPE_F32 }, { "F16", 16, HYOCR_DTYPE_F16 }, { "BF16", 16, HYOCR_DTYPE_BF16 },
    { "I64", 64, HYOCR_DTYPE_I64 }, { "F64", 64, -1 }, { "U64", 64, -1 }, { "C64", 64, -1 },
    { "I32", 32, -1 }, { "U32", 32, -1 }, { "I16", 16, -1 }, { "U16", 16, -1 },
    { "I8", 8, -1 }, { "U8", 8, -1 }, { "BOOL", 8, -1 },
    { "F8_E4M3", 8, -1 }, { "F8_E5M2", 8, -1 }, { "F8_E8M0", 8, -1 },
    { "F6_E2M3", 6, -1 }, { "F6_E3M2", 6, -1 }, { "F4", 4, -1 },
};

static const dtype_info *dtype_lookup(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(DTYPES); i++)
        if (strcmp(DTYPES[i].name, name) == 0) return &DTYPES[i];
    return NULL;
}

const char *hyocr_dtype_name(hyocr_dtype dt)
{
    switch (dt) {
    case HYOCR_DTYPE_F32:  return "F32";
    case HYOCR_DTYPE_F16:  return "F16";
    case HYOCR_DTYPE_BF16: return "BF16";
    case HYOCR_DTYPE_I64:  return "I64";
    default:               return "?";
    }
}

size_t hyocr_dtype_size(hyocr_dtype dt)
{
    switch (dt) {
    case HYOCR_DTYPE_F32:  return 4;
    case HYOCR_DTYPE_F16:  return 2;
    case HYOCR_DTYPE_BF16: return 2;
    case HYOCR_DTYPE_I64:  return 8;
    default:               return 0;
    }
}

float hyocr_bf16_to_f32(uint16_t v)
{
    uint32_t bits = (uint32_t)v << 16;   /* bf16 is the top half of an fp32: exact for every value */
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

float hyocr_f16_to_f32(uint16_t v)
{
    uint32_t sign = (uint32_t)(v & 0x8000) << 16;
    uint32_t exp = (v >> 10) & 0x1f, mant = v & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);          /* inf, or NaN keeping its payload */
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (mant << 13);  /* rebias 15 → 127 */
    } else if (mant == 0) {
        bits = sign;
    } else {
        /* Subnormal: mant·2^-24. Normalise so the leading 1 becomes the implicit bit. */
        int shift = 0;
        while (!(mant & 0x400)) {
            mant <<= 1;
            shift++;
        }
        bits = sign | ((uint32_t)(113 - shift) << 23) | ((mant & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

int64_t hyocr_tensor_numel(const hyocr_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->n_dims; i++) n *= t->shape[i];
    return n;
}

void hyocr_tensor_to_f32(const hyocr_tensor *t, float *out)
{
    int64_t n = hyocr_tensor_numel(t);
    const uint8_t *p = t->data;
    switch (t->dtype) {
    case HYOCR_DTYPE_F32:
        memcpy(out, p, (size_t)n * sizeof(float));
        break;
    case HYOCR_DTYPE_F16:
    case HYOCR_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            h = GUINT16_FROM_LE(h);
            out[i] = t->dtype == HYOCR_DTYPE_F16 ? hyocr_f16_to_f32(h) : hyocr_bf16_to_f32(h);
        }
        break;
    case HYOCR_DTYPE_I64:
        for (int64_t i = 0; i < n; i++) {
            int64_t v;
            memcpy(&v, p + 8 * i, 8);
            out[i] = (float)(int64_t)GINT64_FROM_LE(v);
        }
        break;
    default:
        memset(out, 0, (size_t)n * sizeof(float));
        break;
    }
}

/* ------------------------------------------------------------------ lifetime */

static void st_file_free(gpointer p)
{
    st_file *f = p;
    if (f->map) munmap(f->map, f->size);
    g_free(f->path);
    g_free(f);
}

static void tensor_free(gpointer p)
{
    hyocr_tensor *t = p;
    g_free(t->name);
    g_free(t);
}

static void other_free(gpointer p)
{
    st_other *o = p;
    g_free(o->name);
    g_free(o->dtype);
    g_free(o);
}

static hyocr_safetensors *st_new(void)
{
    hyocr_safetensors *st = g_new0(hyocr_safetensors, 1);
    st->files = g_ptr_array_new_with_free_func(st_file_free);
    st->tensors = g_ptr_array_new_with_free_func(tensor_free);
    st->others = g_ptr_array_new_with_free_func(other_free);
    st->by_name = g_hash_table_new(g_str_hash, g_str_equal);
    st->is_other = g_hash_table_new(g_str_hash, g_str_equal);
    return st;
}

void hyocr_safetensors_free(hyocr_safetensors *st)
{
    if (!st) return;
    g_hash_table_destroy(st->by_name);
    g_hash_table_destroy(st->is_other);
    g_ptr_array_free(st->others, TRUE);
    g_ptr_array_free(st->tensors, TRUE);
    g_ptr_array_free(st->files, TRUE);
    g_free(st);
}

/* ------------------------------------------------------------------ mapping */

void hyocr_tensor_release(const hyocr_tensor *t)
{
    long page = sysconf(_SC_PAGESIZE);
    if (!t || !t->data || !t->nbytes || page <= 0) return;
    /* the mapping is private and never written: a dropped page is read again from the file's
     * cache, so the pages at the ends, shared with neighbours not copied yet, may go too */
    uintptr_t b = (uintptr_t)t->data / (uintptr_t)page * (uintptr_t)page;
    uintptr_t e = (uintptr_t)t->data + t->nbytes;
    madvise((void *)b, e - b, MADV_DONTNEED);
}

static st_file *map_file(const char *path, GError **error)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: cannot open: %s"), path, g_strerror(e));
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: not a regular file"), path);
        return NULL;
    }
    if (sb.st_size < 8) {
        close(fd);
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE,
                    _("%s: not a safetensors file: it is only %lld bytes (a safetensors file starts with an "
                      "8-byte header length); download it again"), path, (long long)sb.st_size);
        return NULL;
    }
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);   /* the mapping keeps the file alive */
    if (map == MAP_FAILED) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: cannot map into memory: %s"), path, g_strerror(e));
        return NULL;
    }
    st_file *f = g_new0(st_file, 1);
    f->path = g_strdup(path);
    f->map = map;
    f->size = (size_t)sb.st_size;
    return f;
}

/* ------------------------------------------------------------------ header entries */

typedef struct {
    const char *name;
    uint64_t    begin, end;
} range;

typedef struct {
    const st_file *file;
    uint64_t       data_size;
    const uint8_t *data;
} parse_ctx;

static bool entry_error(GError **error, const parse_ctx *c, const char *name, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static bool entry_error(GError **error, const parse_ctx *c, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE, _("%s: tensor '%s': %s"), c->file->path, name, msg);
    return false;
}

static bool get_uint(JsonNode *n, uint64_t *out)
{
    if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64) return false;
    int64_t v = json_node_get_int(n);
    if (v < 0) return false;
    *out = (uint64_t)v;
    return true;
}

static bool parse_shape(const parse_ctx *c, const char *name, JsonObject *e, int *n_dims, int64_t *shape,
                        uint64_t *numel, GError **error)
{
    JsonNode *sn = json_object_get_member(e, "shape");
    if (!sn || !JSON_NODE_HOLDS_ARRAY(sn)) return entry_error(error, c, name, _("'shape' missing or not a list"));
    JsonArray *a = json_node_get_array(sn);
    guint nd = json_array_get_length(a);
    if (nd > HYOCR_MAX_DIMS)
        return entry_error(error, c, name, _("shape has %u dimensions (at most %d supported)"), nd, HYOCR_MAX_DIMS);
    *numel = 1;
    for (guint i = 0; i < nd; i++) {
        uint64_t d;
        if (!get_uint(json_array_get_element(a, i), &d))
            return entry_error(error, c, name, _("shape entry %u is not a non-negative integer"), i);
        if (d > (uint64_t)INT64_MAX || __builtin_mul_overflow(*numel, d, numel))
            return entry_error(error, c, name, _("shape is too large (element count overflows)"));
        shape[i] = (int64_t)d;
    }
    *n_dims = (int)nd;
    return true;
}

static bool parse_offsets(const parse_ctx *c, const char *name, JsonObject *e, range *r, GError **error)
{
    JsonNode *on = json_object_get_member(e, "data_offsets");
    if (!on || !JSON_NODE_HOLDS_ARRAY(on) || json_array_get_length(json_node_get_array(on)) != 2)
        return entry_error(error, c, name, _("'data_offsets' missing or not a [begin, end] pair"));
    JsonArray *a = json_node_get_array(on);
    if (!get_uint(json_array_get_element(a, 0), &r->begin) || !get_uint(json_array_get_element(a, 1), &r->end))
        return entry_error(error, c, name, _("'data_offsets' must hold two non-negative integers"));
    if (r->begin > r->end)
        return entry_error(error, c, name, _("data_offsets [%llu, %llu] begin after they end"),
                           (unsigned long long)r->begin, (unsigned long long)r->end);
    if (r->end > c->data_size)
        return entry_error(error, c, name,
                           _("data_offsets [%llu, %llu] run past the end of the file (data section is %llu "
                             "bytes); the file is truncated; download it again"),
                           (unsigned long long)r->begin, (unsigned long long)r->end,
                           (unsigned long long)c->data_size);
    return true;
}

/* Both adders return the stored name, which outlives the parsed header. */
static const char *add_other(hyocr_safetensors *st, const parse_ctx *c, const char *name, const char *dtype)
{
    st_other *o = g_new0(st_other, 1);
    o->name = g_strdup(name);
    o->dtype = g_strdup(dtype);
    o->file = c->file->path;
    g_ptr_array_add(st->others, o);
    g_hash_table_insert(st->by_name, o->name, o);
    g_hash_table_add(st->is_other, o->name);
    return o->name;
}

static const char *add_tensor(hyocr_safetensors *st, const parse_ctx *c, const char *name, hyocr_dtype dt,
                       int n_dims, const int64_t *shape, const range *r)
{
    hyocr_tensor *t = g_new0(hyocr_tensor, 1);
    t->name = g_strdup(name);
    t->dtype = dt;
    t->n_dims = n_dims;
    memcpy(t->shape, shape, sizeof(int64_t) * (size_t)n_dims);
    t->data = c->data + r->begin;
    t->nbytes = (size_t)(r->end - r->begin);
    t->file = c->file->path;
    g_ptr_array_add(st->tensors, t);
    g_hash_table_insert(st->by_name, t->name, t);
    return t->name;
}

static bool parse_entry(hyocr_safetensors *st, const parse_ctx *c, const char *name, JsonNode *node,
                        range *r, GError **error)
{
    if (!JSON_NODE_HOLDS_OBJECT(node)) return entry_error(error, c, name, _("header entry is not a JSON object"));
    JsonObject *e = json_node_get_object(node);
    JsonNode *dn = json_object_get_member(e, "dtype");
    if (!dn || !JSON_NODE_HOLDS_VALUE(dn) || json_node_get_value_type(dn) != G_TYPE_STRING)
        return entry_error(error, c, name, _("'dtype' missing or not a string"));
    const char *dname = json_node_get_string(dn);
    const dtype_info *di = dtype_lookup(dname);
    if (!di)
        return entry_error(error, c, name, _("unknown dtype '%s' (safetensors dtypes are F32, F16, BF16, I64, U8, "
                                             "...); the file is corrupt or not a safetensors file"), dname);
    int n_dims = 0;
    int64_t shape[HYOCR_MAX_DIMS] = { 0 };
    uint64_t numel = 0, bits = 0;
    if (!parse_shape(c, name, e, &n_dims, shape, &numel, error) || !parse_offsets(c, name, e, r, error))
        return false;
    if (__builtin_mul_overflow(numel, (uint64_t)di->bits, &bits) || bits % 8 != 0)
        return entry_error(error, c, name, _("shape does not fill a whole number of bytes of %s"), dname);
    if (bits / 8 != r->end - r->begin) {
        g_autoptr(GString) s = g_string_new("[");
        for (int i = 0; i < n_dims; i++) g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? ", " : "", shape[i]);
        g_string_append_c(s, ']');
        return entry_error(error, c, name, _("shape %s of %s needs %llu bytes but data_offsets [%llu, %llu] hold %llu"),
                           s->str, dname, (unsigned long long)(bits / 8), (unsigned long long)r->begin,
                           (unsigned long long)r->end, (unsigned long long)(r->end - r->begin));
    }
    if (g_hash_table_contains(st->by_name, name)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE, _("%s: tensor '%s' appears in more than one file"),
                    c->file->path, name);
        return false;
    }
    if (di->dtype < 0)
        r->name = add_other(st, c, name, dname);
    else
        r->name = add_tensor(st, c, name, (hyocr_dtype)di->dtype, n_dims, shape, r);
    return true;
}

static int range_cmp(const void *a, const void *b)
{
    const range *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static bool check_overlaps(const parse_ctx *c, GArray *ranges, GError **error)
{
    g_array_sort(ranges, range_cmp);
    const range *prev = NULL;
    for (guint i = 0; i < ranges->len; i++) {
        const range *r = &g_array_index(ranges, range, i);
        if (r->begin == r->end) continue;   /* empty tensors occupy nothing */
        if (prev && r->begin < prev->end) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE,
                        _("%s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] overlap in the data section; the file "
                          "is corrupt; download it again"),
                        c->file->path, prev->name, (unsigned long long)prev->begin, (unsigned long long)prev->end,
                        r->name, (unsigned long long)r->begin, (unsigned long long)r->end);
            return false;
        }
        prev = r;
    }
    return true;
}

/* ------------------------------------------------------------------ one file */

static bool read_header_len(const st_file *f, uint64_t *hlen, GError **error)
{
    uint64_t v;
    memcpy(&v, f->map, 8);
    *hlen = GUINT64_FROM_LE(v);
    if (*hlen > HEADER_LIMIT) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE,
                    _("%s: header length %llu exceeds the 100 MB limit; not a usable safetensors file"),
                    f->path, (unsigned long long)*hlen);
        return false;
    }
    if (*hlen > f->size - 8) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE,
                    _("%s: header length %llu runs past the end of the file (%zu bytes); the file is truncated or "
                      "not a safetensors file; download it again"), f->path, (unsigned long long)*hlen, f->size);
        return false;
    }
    return true;
}

static JsonObject *parse_header(const st_file *f, uint64_t hlen, GError **error)
{
    g_autoptr(GError) perr = NULL;
    g_autoptr(JsonNode) root = hyocr_json_parse((const char *)f->map + 8, hlen, HYOCR_JSON_MAX_DEPTH, NULL, &perr);
    if (!root) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE,
                    _("%s: header is not valid JSON (%s); not a safetensors file, or it is corrupt"), f->path,
                    perr->message);
        return NULL;
    }
    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE, _("%s: header is not a JSON object"), f->path);
        return NULL;
    }
    return json_object_ref(json_node_get_object(root));
}

/* Maps path and adds its tensors to st. */
static bool st_add_file(hyocr_safetensors *st, const char *path, GError **error)
{
    st_file *f = map_file(path, error);
    if (!f) return false;
    g_ptr_array_add(st->files, f);   /* owned by st from here on */
    uint64_t hlen;
    if (!read_header_len(f, &hlen, error)) return false;
    g_autoptr(JsonObject) hdr = parse_header(f, hlen, error);
    if (!hdr) return false;

    parse_ctx c = { f, f->size - 8 - hlen, (const uint8_t *)f->map + 8 + hlen };
    g_autoptr(GArray) ranges = g_array_new(FALSE, FALSE, sizeof(range));
    JsonObjectIter it;
    const char *name;
    JsonNode *node;
    json_object_iter_init_ordered(&it, hdr);
    while (json_object_iter_next_ordered(&it, &name, &node)) {
        if (strcmp(name, "__metadata__") == 0) continue;
        range r = { 0 };
        if (!parse_entry(st, &c, name, node, &r, error)) return false;
        g_array_append_val(ranges, r);
    }
    return check_overlaps(&c, ranges, error);
}

hyocr_safetensors *hyocr_safetensors_open_file(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_autoptr(hyocr_safetensors) st = st_new();
    if (!st_add_file(st, path, error)) return NULL;
    return g_steal_pointer(&st);
}

/* ------------------------------------------------------------------ shards */

/* The index's document; *wm points into it. */
static JsonNode *load_weight_map(const char *index, JsonObject **wm, GError **error)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(JsonNode) root = hyocr_json_read_file(index, &e);
    if (!root && e->code == HYOCR_ERROR_PARSE)
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE, _("%s (not valid JSON; download the model again)"),
                    e->message);
    else if (!root)
        g_propagate_error(error, g_steal_pointer(&e));
    if (!root) return NULL;
    JsonNode *n = JSON_NODE_HOLDS_OBJECT(root) ? json_object_get_member(json_node_get_object(root), "weight_map") : NULL;
    if (!n || !JSON_NODE_HOLDS_OBJECT(n) || json_object_get_size(json_node_get_object(n)) == 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE, _("%s: no 'weight_map' object listing the tensors"), index);
        return NULL;
    }
    *wm = json_node_get_object(n);
    return g_steal_pointer(&root);
}

/* Shard names must be plain file names next to the index: no paths, so an index can't reach elsewhere. */
static bool shard_name_ok(const char *s)
{
    return *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* Collects the shard names of the weight map (sorted, unique) after checking each value. */
static GPtrArray *collect_shards(const char *index, JsonObject *wm, GError **error)
{
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    JsonObjectIter it;
    const char *name;
    JsonNode *node;
    json_object_iter_init_ordered(&it, wm);
    while (json_object_iter_next_ordered(&it, &name, &node)) {
        const char *shard = JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING
                            ? json_node_get_string(node) : NULL;
        if (!shard || !shard_name_ok(shard)) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE,
                        _("%s: weight_map entry for tensor '%s' must be the file name of a shard in the same folder"),
                        index, name);
            return NULL;
        }
        g_hash_table_add(seen, (gpointer)shard);
    }
    GPtrArray *shards = g_ptr_array_new();
    GHashTableIter hi;
    gpointer key;
    g_hash_table_iter_init(&hi, seen);
    while (g_hash_table_iter_next(&hi, &key, NULL)) g_ptr_array_add(shards, key);
    return shards;
}

static int cmp_str_ptr(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool check_weight_map(const hyocr_safetensors *st, const char *index, const char *dir, JsonObject *wm,
                             GError **error)
{
    JsonObjectIter it;
    const char *name;
    JsonNode *node;
    json_object_iter_init_ordered(&it, wm);
    while (json_object_iter_next_ordered(&it, &name, &node)) {
        g_autofree char *want = g_build_filename(dir, json_node_get_string(node), NULL);
        const hyocr_tensor *t = hyocr_safetensors_find(st, name);
        const char *file = t ? t->file : NULL;
        if (!t && g_hash_table_contains(st->is_other, name))
            file = ((const st_other *)g_hash_table_lookup(st->by_name, name))->file;
        if (!file || strcmp(file, want) != 0) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                        _("%s lists tensor '%s' in %s, but that shard does not contain it; the files are from "
                          "different downloads; download the model again"), index, name, json_node_get_string(node));
            return false;
        }
    }
    return true;
}

static hyocr_safetensors *open_index(const char *dir, const char *index, GError **error)
{
    JsonObject *wm = NULL;
    g_autoptr(JsonNode) doc = load_weight_map(index, &wm, error);
    if (!doc) return NULL;
    g_autoptr(GPtrArray) shards = collect_shards(index, wm, error);
    if (!shards) return NULL;
    g_ptr_array_sort(shards, cmp_str_ptr);
    for (guint i = 0; i < shards->len; i++) {
        g_autofree char *p = g_build_filename(dir, shards->pdata[i], NULL);
        if (!g_file_test(p, G_FILE_TEST_EXISTS)) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO,
                        _("%s names shard '%s', which is missing from %s; the download is incomplete; download "
                          "the model again"), index, (const char *)shards->pdata[i], dir);
            return NULL;
        }
    }
    g_autoptr(hyocr_safetensors) st = st_new();
    for (guint i = 0; i < shards->len; i++) {
        g_autofree char *p = g_build_filename(dir, shards->pdata[i], NULL);
        if (!st_add_file(st, p, error)) return NULL;
    }
    if (!check_weight_map(st, index, dir, wm, error)) return NULL;
    return g_steal_pointer(&st);
}

hyocr_safetensors *hyocr_safetensors_open_dir(const char *dir, GError **error)
{
    g_return_val_if_fail(dir != NULL, NULL);
    g_autofree char *index = g_build_filename(dir, "model.safetensors.index.json", NULL);
    if (g_file_test(index, G_FILE_TEST_EXISTS)) return open_index(dir, index, error);
    g_autofree char *single = g_build_filename(dir, "model.safetensors", NULL);
    if (g_file_test(single, G_FILE_TEST_EXISTS)) return hyocr_safetensors_open_file(single, error);
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_MODEL_MISSING,
                _("no model.safetensors or model.safetensors.index.json in %s: the weights were not downloaded"), dir);
    return NULL;
}

/* ------------------------------------------------------------------ queries */

size_t hyocr_safetensors_count(const hyocr_safetensors *st) { return st->tensors->len; }

const hyocr_tensor *hyocr_safetensors_at(const hyocr_safetensors *st, size_t i)
{
    return i < st->tensors->len ? st->tensors->pdata[i] : NULL;
}

const hyocr_tensor *hyocr_safetensors_find(const hyocr_safetensors *st, const char *name)
{
    if (g_hash_table_contains(st->is_other, name)) return NULL;
    return g_hash_table_lookup(st->by_name, name);
}

size_t hyocr_safetensors_count_other(const hyocr_safetensors *st) { return st->others->len; }

const char *hyocr_safetensors_other_name(const hyocr_safetensors *st, size_t i)
{
    return i < st->others->len ? ((const st_other *)st->others->pdata[i])->name : NULL;
}

const char *hyocr_safetensors_other_dtype(const hyocr_safetensors *st, const char *name)
{
    if (!g_hash_table_contains(st->is_other, name)) return NULL;
    return ((const st_other *)g_hash_table_lookup(st->by_name, name))->dtype;
}

int hyocr_safetensors_n_files(const hyocr_safetensors *st) { return (int)st->files->len; }
