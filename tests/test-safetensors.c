/* Tests for the safetensors reader: files are written here, byte by byte, so every
 * corruption is deliberate and the expected values are known independently of the reader. */
#include "safetensors.h"
#include "error.h"
#include "testutil.h"

#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ file builders */

/* Plain write: g_file_set_contents fsyncs, which makes the corruption sweep crawl. */
static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *fp = fopen(path, "wb");
    g_assert_nonnull(fp);
    g_assert_cmpuint(fwrite(data, 1, n, fp), ==, n);
    g_assert_cmpint(fclose(fp), ==, 0);
}

typedef struct {
    const char *name;
    const char *dtype;
    int         n_dims;
    int64_t     shape[4];
    const void *data;
    size_t      nbytes;
} tspec;

/* Writes u64 LE header length, the header, then data; hlen_override ≥ 0 lies about the length. */
static void write_raw(const char *path, const char *header, int64_t hlen_override, const void *data, size_t n)
{
    size_t hlen = strlen(header);
    uint64_t le = GUINT64_TO_LE(hlen_override >= 0 ? (uint64_t)hlen_override : (uint64_t)hlen);
    g_autoptr(GByteArray) b = g_byte_array_new();
    g_byte_array_append(b, (const guint8 *)&le, 8);
    g_byte_array_append(b, (const guint8 *)header, (guint)hlen);
    if (n) g_byte_array_append(b, data, (guint)n);
    write_bytes(path, b->data, b->len);
}

/* Builds a well-formed header (with __metadata__ and space padding to 8 bytes, like the
 * reference writer) for consecutive tensors, and the matching data section. */
static char *build_header(const tspec *t, int n, GByteArray *data)
{
    GString *h = g_string_new("{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < n; i++) {
        g_string_append_printf(h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t[i].name, t[i].dtype);
        for (int d = 0; d < t[i].n_dims; d++) g_string_append_printf(h, "%s%" G_GINT64_FORMAT, d ? "," : "", t[i].shape[d]);
        g_string_append_printf(h, "],\"data_offsets\":[%u,%u]}", data->len, (unsigned)(data->len + t[i].nbytes));
        if (t[i].nbytes) g_byte_array_append(data, t[i].data, (guint)t[i].nbytes);
    }
    g_string_append_c(h, '}');
    while (h->len % 8) g_string_append_c(h, ' ');
    return g_string_free(h, FALSE);
}

static void write_st(const char *path, const tspec *t, int n)
{
    g_autoptr(GByteArray) data = g_byte_array_new();
    g_autofree char *h = build_header(t, n, data);
    write_raw(path, h, -1, data->data, data->len);
}

static void assert_error(GError *err, int code, const char *const *needles)
{
    g_assert_nonnull(err);
    if (err->domain != HYOCR_ERROR || err->code != code)
        g_error("expected code %d, got %d: %s", code, err->code, err->message);
    for (; *needles; needles++)
        if (!strstr(err->message, *needles)) g_error("message lacks '%s': %s", *needles, err->message);
}

#define ASSERT_ERR(err, code, ...) assert_error((err), (code), (const char *const[]){ __VA_ARGS__, NULL })

static void expect_open_error(const char *path, int code, const char *const *needles)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_safetensors) st = hyocr_safetensors_open_file(path, &err);
    g_assert_null(st);
    assert_error(err, code, needles);
}

#define EXPECT_OPEN_ERR(path, code, ...) expect_open_error((path), (code), (const char *const[]){ __VA_ARGS__, NULL })

/* ------------------------------------------------------------------ round trip */

static void test_roundtrip(void)
{
    g_autofree char *dir = hyocr_test_tmpdir();
    g_autofree char *path = g_build_filename(dir, "t.safetensors", NULL);
    const float f32[6] = { 1.5f, -2.25f, 0.0f, 3.0e-39f, 1e30f, -7.0f };
    const uint16_t f16[4] = { GUINT16_TO_LE(0x3c00), GUINT16_TO_LE(0xc000), GUINT16_TO_LE(0x3800), GUINT16_TO_LE(0x7bff) };
    const uint16_t bf16[4] = { GUINT16_TO_LE(0x3f80), GUINT16_TO_LE(0x8000), GUINT16_TO_LE(0x4049), GUINT16_TO_LE(0x7f80) };
    const int64_t i64[2] = { GINT64_TO_LE(-3), GINT64_TO_LE(1 << 20) };
    const uint8_t u8[3] = { 1, 2, 3 };
    const tspec t[] = {
        { "a.f32", "F32", 2, { 2, 3 }, f32, sizeof f32 },
        { "b.f16", "F16", 1, { 4 }, f16, sizeof f16 },
        { "c.bf16", "BF16", 2, { 2, 2 }, bf16, sizeof bf16 },
        { "d.i64", "I64", 1, { 2 }, i64, sizeof i64 },
        { "e.u8", "U8", 1, { 3 }, u8, sizeof u8 },
        { "f.empty", "F32", 2, { 0, 5 }, NULL, 0 },
        { "g.scalar", "F32", 0, { 0 }, f32, 4 },
    };
    write_st(path, t, G_N_ELEMENTS(t));

    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_safetensors) st = hyocr_safetensors_open_file(path, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(hyocr_safetensors_count(st), ==, 6);
    g_assert_cmpuint(hyocr_safetensors_count_other(st), ==, 1);
    g_assert_cmpstr(hyocr_safetensors_other_name(st, 0), ==, "e.u8");
    g_assert_cmpstr(hyocr_safetensors_other_dtype(st, "e.u8"), ==, "U8");
    g_assert_null(hyocr_safetensors_other_dtype(st, "a.f32"));
    g_assert_null(hyocr_safetensors_find(st, "e.u8"));
    g_assert_null(hyocr_safetensors_find(st, "__metadata__"));
    g_assert_cmpint(hyocr_safetensors_n_files(st), ==, 1);

    const hyocr_tensor *a = hyocr_safetensors_find(st, "a.f32");
    g_assert_nonnull(a);
    g_assert_cmpint(a->dtype, ==, HYOCR_DTYPE_F32);
    g_assert_cmpint(a->n_dims, ==, 2);
    g_assert_cmpint(a->shape[0], ==, 2);
    g_assert_cmpint(a->shape[1], ==, 3);
    g_assert_cmpuint(a->nbytes, ==, 24);
    g_assert_cmpstr(a->file, ==, path);
    g_assert_cmpint(hyocr_tensor_numel(a), ==, 6);
    float out[6];
    hyocr_tensor_to_f32(a, out);
    g_assert_cmpmem(out, sizeof out, f32, sizeof f32);

    const hyocr_tensor *b = hyocr_safetensors_find(st, "b.f16");
    g_assert_cmpint(b->dtype, ==, HYOCR_DTYPE_F16);
    hyocr_tensor_to_f32(b, out);
    g_assert_cmpfloat(out[0], ==, 1.0f);
    g_assert_cmpfloat(out[1], ==, -2.0f);
    g_assert_cmpfloat(out[2], ==, 0.5f);
    g_assert_cmpfloat(out[3], ==, 65504.0f);

    const hyocr_tensor *c = hyocr_safetensors_find(st, "c.bf16");
    g_assert_cmpint(c->dtype, ==, HYOCR_DTYPE_BF16);
    hyocr_tensor_to_f32(c, out);
    g_assert_cmpfloat(out[0], ==, 1.0f);
    g_assert_true(out[1] == 0.0f && signbit(out[1]));
    g_assert_cmpfloat(out[2], ==, 3.140625f);
    g_assert_true(isinf(out[3]) && out[3] > 0);

    const hyocr_tensor *d = hyocr_safetensors_find(st, "d.i64");
    g_assert_cmpint(d->dtype, ==, HYOCR_DTYPE_I64);
    hyocr_tensor_to_f32(d, out);
    g_assert_cmpfloat(out[0], ==, -3.0f);
    g_assert_cmpfloat(out[1], ==, 1048576.0f);

    const hyocr_tensor *f = hyocr_safetensors_find(st, "f.empty");
    g_assert_cmpint(hyocr_tensor_numel(f), ==, 0);
    g_assert_cmpuint(f->nbytes, ==, 0);
    const hyocr_tensor *g = hyocr_safetensors_find(st, "g.scalar");
    g_assert_cmpint(g->n_dims, ==, 0);
    g_assert_cmpint(hyocr_tensor_numel(g), ==, 1);

    g_assert_cmpstr(hyocr_dtype_name(HYOCR_DTYPE_BF16), ==, "BF16");
    g_assert_cmpuint(hyocr_dtype_size(HYOCR_DTYPE_F32), ==, 4);
    g_assert_cmpuint(hyocr_dtype_size(HYOCR_DTYPE_BF16), ==, 2);
    g_assert_cmpuint(hyocr_dtype_size(HYOCR_DTYPE_I64), ==, 8);
    hyocr_test_rmdir(dir);
}

/* Data at an odd offset: conversion must not assume alignment (UBSan checks this). */
static void test_unaligned(void)
{
    g_autofree char *dir = hyocr_test_tmpdir();
    g_autofree char *path = g_build_filename(dir, "u.safetensors", NULL);
    const char *h = "{\"pad\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                    "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1,9]},"
                    "\"y\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[9,11]}}";
    uint8_t data[11] = { 0 };
    const float xs[2] = { 2.5f, -1.0f };
    memcpy(data + 1, xs, 8);
    data[9] = 0x80; data[10] = 0x3f;   /* bf16 1.0, little-endian */
    write_raw(path, h, -1, data, sizeof data);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_safetensors) st = hyocr_safetensors_open_file(path, &err);
    g_assert_no_error(err);
    float out[2];
    hyocr_tensor_to_f32(hyocr_safetensors_find(st, "x"), out);
    g_assert_cmpfloat(out[0], ==, 2.5f);
    g_assert_cmpfloat(out[1], ==, -1.0f);
    hyocr_tensor_to_f32(hyocr_safetensors_find(st, "y"), out);
    g_assert_cmpfloat(out[0], ==, 1.0f);
    hyocr_test_rmdir(dir);
}

/* ------------------------------------------------------------------ conversions */

/* Reference decoders written from the IEEE field definitions with ldexp (not bit tricks). */
static double ref_decode(uint32_t v, int exp_bits, int mant_bits)
{
    int sign = (v >> (exp_bits + mant_bits)) & 1;
    uint32_t e = (v >> mant_bits) & ((1u << exp_bits) - 1), m = v & ((1u << mant_bits) - 1);
    int bias = (1 << (exp_bits - 1)) - 1;
    double r;
    if (e == (1u << exp_bits) - 1) r = m ? NAN : INFINITY;
    else if (e == 0) r = ldexp((double)m, 1 - bias - mant_bits);
    else r = ldexp(1.0 + ldexp((double)m, -mant_bits), (int)e - bias);
    return sign ? -r : r;
}

static void check_same(float got, double want, uint32_t v)
{
    if (isnan(want)) {
        if (!isnan(got)) g_error("0x%04x: expected NaN, got %a", v, got);
        return;
    }
    if ((double)got != want || !signbit(got) != !signbit(want))
        g_error("0x%04x: expected %a, got %a", v, want, got);
}

static void test_bf16_edges(void)
{
    g_assert_cmpfloat(hyocr_bf16_to_f32(0x3f80), ==, 1.0f);
    g_assert_cmpfloat(hyocr_bf16_to_f32(0xc040), ==, -3.0f);
    g_assert_true(signbit(hyocr_bf16_to_f32(0x8000)) && hyocr_bf16_to_f32(0x8000) == 0.0f);
    g_assert_true(isinf(hyocr_bf16_to_f32(0x7f80)) && hyocr_bf16_to_f32(0x7f80) > 0);
    g_assert_true(isinf(hyocr_bf16_to_f32(0xff80)) && hyocr_bf16_to_f32(0xff80) < 0);
    g_assert_true(isnan(hyocr_bf16_to_f32(0x7fc0)));
    g_assert_true(isnan(hyocr_bf16_to_f32(0xff81)));
    g_assert_cmpfloat(hyocr_bf16_to_f32(0x0001), ==, ldexpf(1.0f, -133));   /* smallest subnormal */
    g_assert_cmpfloat(hyocr_bf16_to_f32(0x0080), ==, ldexpf(1.0f, -126));   /* smallest normal */
    g_assert_cmpfloat(hyocr_bf16_to_f32(0x7f7f), ==, ldexpf(255.0f / 128.0f, 127)); /* largest */
    for (uint32_t v = 0; v < 65536; v++) check_same(hyocr_bf16_to_f32((uint16_t)v), ref_decode(v, 8, 7), v);
}

static void test_f16_edges(void)
{
    g_assert_cmpfloat(hyocr_f16_to_f32(0x3c00), ==, 1.0f);
    g_assert_cmpfloat(hyocr_f16_to_f32(0xc000), ==, -2.0f);
    g_assert_cmpfloat(hyocr_f16_to_f32(0x7bff), ==, 65504.0f);
    g_assert_cmpfloat(hyocr_f16_to_f32(0x0001), ==, ldexpf(1.0f, -24));
    g_assert_cmpfloat(hyocr_f16_to_f32(0x03ff), ==, ldexpf(1023.0f, -24));
    g_assert_cmpfloat(hyocr_f16_to_f32(0x0400), ==, ldexpf(1.0f, -14));
    g_assert_cmpfloat(hyocr_f16_to_f32(0x8001), ==, -ldexpf(1.0f, -24));
    g_assert_true(signbit(hyocr_f16_to_f32(0x8000)) && hyocr_f16_to_f32(0x8000) == 0.0f);
    g_assert_true(isinf(hyocr_f16_to_f32(0x7c00)) && hyocr_f16_to_f32(0x7c00) > 0);
    g_assert_true(isinf(hyocr_f16_to_f32(0xfc00)) && hyocr_f16_to_f32(0xfc00) < 0);
    g_assert_true(isnan(hyocr_f16_to_f32(0x7e00)));
    g_assert_true(isnan(hyocr_f16_to_f32(0x7c01)));   /* signalling NaN stays NaN, not inf */
    for (uint32_t v = 0; v < 65536; v++) check_same(hyocr_f16_to_f32((uint16_t)v), ref_decode(v, 5, 10), v);
#ifdef __FLT16_MAX__
    /* A second, independent reference: the compiler's own half → float conversion. */
    for (uint32_t v = 0; v < 65536; v++) {
        uint16_t h = (uint16_t)v;
        _Float16 x;
        memcpy(&x, &h, 2);
        float want = (float)x, got = hyocr_f16_to_f32(h);
        g_assert_true(isnan(want) ? isnan(got) : memcmp(&want, &got, 4) == 0);
    }
#endif
}

/* ------------------------------------------------------------------ corrupt files */

typedef struct {
    char *dir;
    char *path;
} fixture;

static void fx_setup(fixture *f, gconstpointer data)
{
    f->dir = hyocr_test_tmpdir();
    f->path = g_build_filename(f->dir, "model-00002-of-00004.safetensors", NULL);
}

static void fx_teardown(fixture *f, gconstpointer data)
{
    hyocr_test_rmdir(f->dir);
    g_free(f->dir);
    g_free(f->path);
}

static const float FOUR[4] = { 1, 2, 3, 4 };

static void test_truncated(fixture *f, gconstpointer data)
{
    const tspec t[] = { { "first", "F32", 1, { 4 }, FOUR, 16 }, { "model.norm.weight", "F32", 1, { 4 }, FOUR, 16 } };
    write_st(f->path, t, 2);
    /* A partial download: drop the last 5 bytes. */
    g_autofree char *buf = NULL;
    gsize len;
    g_assert_true(g_file_get_contents(f->path, &buf, &len, NULL));
    write_bytes(f->path, buf, len - 5);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "'model.norm.weight'", "[16, 32]", "run past the end",
                    "data section is 27 bytes");
}

static void test_offsets_past_end(fixture *f, gconstpointer data)
{
    write_raw(f->path, "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[100,116]}}", -1, FOUR, 16);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "'x'", "[100, 116]", "data section is 16 bytes");
}

static void test_header_longer_than_file(fixture *f, gconstpointer data)
{
    write_raw(f->path, "{}", 1000, NULL, 0);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "header length 1000", "runs past the end");
    write_raw(f->path, "{}", (int64_t)1 << 62, NULL, 0);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "header length");
}

static void test_header_over_limit(fixture *f, gconstpointer data)
{
    write_raw(f->path, "{}", (int64_t)200 << 20, NULL, 0);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "header length 209715200", "100 MB");
}

static void test_tiny_file(fixture *f, gconstpointer data)
{
    write_bytes(f->path, "abc", 3);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "only 3 bytes");
    write_bytes(f->path, "", 0);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "only 0 bytes");
}

static void test_missing_file(fixture *f, gconstpointer data)
{
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_IO, f->path, "cannot open");
    EXPECT_OPEN_ERR(f->dir, HYOCR_ERROR_IO, f->dir, "not a regular file");
}

static void test_not_json(fixture *f, gconstpointer data)
{
    write_raw(f->path, "this is not json", -1, NULL, 0);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "not valid JSON");
    write_raw(f->path, "[1, 2, 3]", -1, NULL, 0);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "not a JSON object");
    write_raw(f->path, "", -1, NULL, 0);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "not valid JSON");
    write_raw(f->path, "{\"x\": \"\xff\xfe\"}", -1, NULL, 0);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "not valid JSON");
    /* 100 000 '[' crashed json-glib (stack overflow); two objects were taken as one */
    g_autofree char *bomb = g_strnfill(100000, '[');
    write_raw(f->path, bomb, -1, NULL, 0);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "not valid JSON", "nested deeper than 128 levels at byte 128");
    write_raw(f->path, "{}{\"x\":{}}  ", -1, NULL, 0);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "not valid JSON", "trailing data after the JSON value at byte 2");
}

static void test_overlap(fixture *f, gconstpointer data)
{
    uint8_t buf[24] = { 0 };
    write_raw(f->path, "{\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", -1, buf, sizeof buf);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "'a' [0, 16]", "'b' [8, 24]", "overlap");
    /* Empty tensors may sit anywhere; identical ranges are an overlap. */
    write_raw(f->path, "{\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", -1, buf, 16);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_safetensors) st = hyocr_safetensors_open_file(f->path, &err);
    g_assert_no_error(err);
    g_assert_nonnull(st);
    write_raw(f->path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                       "\"c\":{\"dtype\":\"BF16\",\"shape\":[8],\"data_offsets\":[0,16]}}", -1, buf, 16);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "'a'", "'c'", "overlap");
}

static void test_size_mismatch(fixture *f, gconstpointer data)
{
    write_raw(f->path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", -1, FOUR, 16);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "'w'", "[3]", "needs 12 bytes", "[0, 8]");
    write_raw(f->path, "{\"w\":{\"dtype\":\"BF16\",\"shape\":[2, 2],\"data_offsets\":[0,16]}}", -1, FOUR, 16);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "'w'", "[2, 2] of BF16 needs 8 bytes");
    /* numel overflow: 2^32 · 2^32 elements */
    write_raw(f->path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,16]}}", -1, FOUR, 16);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "'w'", "overflow");
    /* numel · bits overflows although numel alone does not */
    write_raw(f->path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,16]}}", -1, FOUR, 16);
    EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "'w'");
}

static void test_bad_entries(fixture *f, gconstpointer data)
{
    static const struct { const char *header; const char *needle; } cases[] = {
        { "{\"w\":{\"dtype\":\"F9\",\"shape\":[4],\"data_offsets\":[0,16]}}", "unknown dtype 'F9'" },
        { "{\"w\":{\"shape\":[4],\"data_offsets\":[0,16]}}", "'dtype' missing" },
        { "{\"w\":{\"dtype\":7,\"shape\":[4],\"data_offsets\":[0,16]}}", "'dtype' missing or not a string" },
        { "{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,16]}}", "'shape' missing" },
        { "{\"w\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}", "not a non-negative integer" },
        { "{\"w\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,16]}}", "not a non-negative integer" },
        { "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,4],\"data_offsets\":[0,16]}}", "5 dimensions" },
        { "{\"w\":{\"dtype\":\"F32\",\"shape\":[4]}}", "'data_offsets' missing" },
        { "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0]}}", "[begin, end]" },
        { "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,-16]}}", "non-negative" },
        { "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[16,0]}}", "begin after" },
        { "{\"w\":[1,2]}", "not a JSON object" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        write_raw(f->path, cases[i].header, -1, FOUR, 16);
        EXPECT_OPEN_ERR(f->path, HYOCR_ERROR_PARSE, f->path, "tensor 'w'", cases[i].needle);
    }
}

/* Every truncation and many single-byte corruptions of a valid file: never a crash, always
 * either a usable file or an error with a message. Run under ASan/UBSan to mean something. */
static void test_corruption_sweep(fixture *f, gconstpointer data)
{
    const uint16_t bf[6] = { 0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0, 0x40c0 };
    const tspec t[] = { { "vit.a", "BF16", 2, { 2, 3 }, bf, 12 }, { "model.b", "F32", 1, { 4 }, FOUR, 16 } };
    g_autoptr(GByteArray) data_sec = g_byte_array_new();
    g_autofree char *h = build_header(t, 2, data_sec);
    write_st(f->path, t, 2);
    g_autofree char *good = NULL;
    gsize len;
    g_assert_true(g_file_get_contents(f->path, &good, &len, NULL));
    for (gsize cut = 0; cut < len; cut++) {
        write_bytes(f->path, good, cut);
        g_autoptr(GError) err = NULL;
        g_autoptr(hyocr_safetensors) st = hyocr_safetensors_open_file(f->path, &err);
        g_assert_null(st);
        g_assert_nonnull(err);
        g_assert_nonnull(strstr(err->message, f->path));
    }
    GRand *r = g_rand_new_with_seed(1234);
    g_autofree char *bad = g_malloc(len);
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(bad, good, len);
        gsize pos = (gsize)g_rand_int_range(r, 0, (gint32)(8 + strlen(h)));
        bad[pos] = (char)g_rand_int_range(r, 0, 256);
        write_bytes(f->path, bad, len);
        g_autoptr(GError) err = NULL;
        g_autoptr(hyocr_safetensors) st = hyocr_safetensors_open_file(f->path, &err);
        if (st) {
            g_assert_no_error(err);
            /* Reads every element: a range outside the mapping would fault here. */
            for (size_t i = 0; i < hyocr_safetensors_count(st); i++) {
                const hyocr_tensor *x = hyocr_safetensors_at(st, i);
                g_assert_cmpuint(x->nbytes, <=, len);
                g_autofree float *tmp = g_new(float, hyocr_tensor_numel(x) + 1);
                hyocr_tensor_to_f32(x, tmp);
            }
        } else {
            g_assert_nonnull(err);
            g_assert_nonnull(strstr(err->message, f->path));
        }
    }
    g_rand_free(r);
}

/* ------------------------------------------------------------------ shards */

static const char *INDEX_OK =
    "{\"metadata\":{\"total_size\":40},\"weight_map\":{"
    "\"vit.a\":\"model-00001-of-00002.safetensors\","
    "\"vit.b\":\"model-00001-of-00002.safetensors\","
    "\"model.c\":\"model-00002-of-00002.safetensors\"}}";

static void write_shards(const char *dir)
{
    g_autofree char *p1 = g_build_filename(dir, "model-00001-of-00002.safetensors", NULL);
    g_autofree char *p2 = g_build_filename(dir, "model-00002-of-00002.safetensors", NULL);
    const tspec s1[] = { { "vit.a", "F32", 1, { 4 }, FOUR, 16 }, { "vit.b", "F32", 2, { 2, 1 }, FOUR, 8 } };
    const tspec s2[] = { { "model.c", "F32", 1, { 3 }, FOUR, 12 } };
    write_st(p1, s1, 2);
    write_st(p2, s2, 1);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    g_autofree char *p = g_build_filename(dir, name, NULL);
    write_bytes(p, text, strlen(text));
}

/* KiB of path's mappings in this process's resident set (/proc/self/smaps), -1 if not mapped. */
static long mapped_rss_kib(const char *path)
{
    g_autofree char *smaps = NULL;
    g_assert_true(g_file_get_contents("/proc/self/smaps", &smaps, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(smaps, "\n", -1);
    long total = -1;
    gboolean in = FALSE;
    for (int i = 0; lines[i]; i++) {
        long kib;
        if (g_ascii_isxdigit(lines[i][0]) && strchr(lines[i], '-'))   /* a mapping's first line */
            in = g_str_has_suffix(lines[i], path);
        else if (in && sscanf(lines[i], "Rss: %ld kB", &kib) == 1)
            total = (total < 0 ? 0 : total) + kib;
    }
    return total;
}

/* Every tensor's bytes, each weighted by its place (a changed or moved byte shows). */
static uint64_t weighted_sum(const hyocr_safetensors *st)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < hyocr_safetensors_count(st); i++) {
        const hyocr_tensor *t = hyocr_safetensors_at(st, i);
        for (size_t k = 0; k < t->nbytes; k++) sum += ((const uint8_t *)t->data)[k] * (k + 1);
    }
    return sum;
}

/* A loaded tensor's pages leave the resident set and read back the same. */
static void test_release(void)
{
    g_autofree char *path = hyocr_test_data("ckpt-flat", "model-00001-of-00002.safetensors", NULL);
    if (!hyocr_test_require(path)) return;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_safetensors) st = hyocr_safetensors_open_file(path, &err);
    g_assert_no_error(err);
    g_autofree char *real = realpath(path, NULL);
    const uint64_t sum = weighted_sum(st);
    size_t bytes = 0;
    for (size_t i = 0; i < hyocr_safetensors_count(st); i++) bytes += hyocr_safetensors_at(st, i)->nbytes;
    long before = mapped_rss_kib(real);
    g_test_message("%zu tensor bytes; the mapping's RSS %ld KiB", bytes, before);
    g_assert_cmpint(before, >=, (long)(bytes / 1024));
    for (size_t i = 0; i < hyocr_safetensors_count(st); i++) hyocr_tensor_release(hyocr_safetensors_at(st, i));
    long after = mapped_rss_kib(real);
    g_test_message("after the release: %ld KiB", after);
    g_assert_cmpint(after, <=, before - (long)(bytes / 1024) + 8);   /* the header's pages may stay */
    g_assert_cmpuint(weighted_sum(st), ==, sum);
    hyocr_tensor_release(NULL);
}

static void test_shards_ok(void)
{
    g_autofree char *dir = hyocr_test_tmpdir();
    write_shards(dir);
    write_text(dir, "model.safetensors.index.json", INDEX_OK);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_safetensors) st = hyocr_safetensors_open_dir(dir, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(hyocr_safetensors_count(st), ==, 3);
    g_assert_cmpint(hyocr_safetensors_n_files(st), ==, 2);
    const hyocr_tensor *c = hyocr_safetensors_find(st, "model.c");
    g_assert_nonnull(c);
    g_assert_true(g_str_has_suffix(c->file, "model-00002-of-00002.safetensors"));
    g_assert_true(g_str_has_suffix(hyocr_safetensors_find(st, "vit.b")->file, "model-00001-of-00002.safetensors"));
    float out[3];
    hyocr_tensor_to_f32(c, out);
    g_assert_cmpfloat(out[2], ==, 3.0f);
    hyocr_test_rmdir(dir);
}

static void test_index_preferred(void)
{
    g_autofree char *dir = hyocr_test_tmpdir();
    write_shards(dir);
    write_text(dir, "model.safetensors.index.json", INDEX_OK);
    g_autofree char *single = g_build_filename(dir, "model.safetensors", NULL);
    const tspec only[] = { { "only.in.single", "F32", 1, { 1 }, FOUR, 4 } };
    write_st(single, only, 1);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_safetensors) st = hyocr_safetensors_open_dir(dir, &err);
    g_assert_no_error(err);
    g_assert_null(hyocr_safetensors_find(st, "only.in.single"));
    g_assert_nonnull(hyocr_safetensors_find(st, "model.c"));
    /* Without the index, model.safetensors is used. */
    g_autofree char *index = g_build_filename(dir, "model.safetensors.index.json", NULL);
    g_unlink(index);
    g_autoptr(hyocr_safetensors) st2 = hyocr_safetensors_open_dir(dir, &err);
    g_assert_no_error(err);
    g_assert_nonnull(hyocr_safetensors_find(st2, "only.in.single"));
    /* Neither: a clear error naming the folder. */
    g_unlink(single);
    g_autoptr(hyocr_safetensors) st3 = hyocr_safetensors_open_dir(dir, &err);
    g_assert_null(st3);
    ASSERT_ERR(err, HYOCR_ERROR_MODEL_MISSING, "no model.safetensors or model.safetensors.index.json", dir);
    hyocr_test_rmdir(dir);
}

static void expect_dir_error(const char *dir, int code, const char *const *needles)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_safetensors) st = hyocr_safetensors_open_dir(dir, &err);
    g_assert_null(st);
    assert_error(err, code, needles);
}

#define EXPECT_DIR_ERR(dir, code, ...) expect_dir_error((dir), (code), (const char *const[]){ __VA_ARGS__, NULL })

static void test_index_errors(void)
{
    g_autofree char *dir = hyocr_test_tmpdir();
    write_shards(dir);
    g_autofree char *index = g_build_filename(dir, "model.safetensors.index.json", NULL);

    write_text(dir, "model.safetensors.index.json",
               "{\"weight_map\":{\"vit.a\":\"model-00001-of-00002.safetensors\",\"x\":\"model-00003-of-00004.safetensors\"}}");
    EXPECT_DIR_ERR(dir, HYOCR_ERROR_IO, index, "'model-00003-of-00004.safetensors'", "missing");

    write_text(dir, "model.safetensors.index.json", "{\"weight_map\": {\"vit.a\": \"model-00001-of-00002.safetensors\",");
    EXPECT_DIR_ERR(dir, HYOCR_ERROR_PARSE, index, "not valid JSON");

    g_autofree char *bomb = g_strnfill(100000, '{');
    write_text(dir, "model.safetensors.index.json", bomb);
    EXPECT_DIR_ERR(dir, HYOCR_ERROR_PARSE, index, "nested deeper than 128 levels");
    write_text(dir, "model.safetensors.index.json",
               "{\"weight_map\":{\"vit.a\":\"model-00001-of-00002.safetensors\"}}\n{\"weight_map\": {}}");
    EXPECT_DIR_ERR(dir, HYOCR_ERROR_PARSE, index, "trailing data after the JSON value at byte 60 (line 2, column 1)");

    write_text(dir, "model.safetensors.index.json", "{\"metadata\": {}}");
    EXPECT_DIR_ERR(dir, HYOCR_ERROR_PARSE, index, "weight_map");

    write_text(dir, "model.safetensors.index.json", "{\"weight_map\":{\"vit.a\":\"../model-00001-of-00002.safetensors\"}}");
    EXPECT_DIR_ERR(dir, HYOCR_ERROR_PARSE, index, "'vit.a'", "same folder");

    write_text(dir, "model.safetensors.index.json", "{\"weight_map\":{\"vit.a\":5}}");
    EXPECT_DIR_ERR(dir, HYOCR_ERROR_PARSE, index, "'vit.a'");

    /* Listed in the wrong shard. */
    write_text(dir, "model.safetensors.index.json",
               "{\"weight_map\":{\"vit.a\":\"model-00002-of-00002.safetensors\",\"model.c\":\"model-00002-of-00002.safetensors\","
               "\"vit.b\":\"model-00001-of-00002.safetensors\"}}");
    EXPECT_DIR_ERR(dir, HYOCR_ERROR_CHECKPOINT, index, "'vit.a'", "model-00002-of-00002.safetensors", "does not contain");

    /* A tensor in two shards. */
    g_autofree char *p2 = g_build_filename(dir, "model-00002-of-00002.safetensors", NULL);
    const tspec dup[] = { { "vit.a", "F32", 1, { 4 }, FOUR, 16 } };
    write_st(p2, dup, 1);
    write_text(dir, "model.safetensors.index.json", INDEX_OK);
    EXPECT_DIR_ERR(dir, HYOCR_ERROR_PARSE, "'vit.a'", "more than one file");

    /* A corrupt shard is reported with its own name. */
    write_raw(p2, "{\"model.c\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,99]}}", -1, FOUR, 12);
    EXPECT_DIR_ERR(dir, HYOCR_ERROR_PARSE, p2, "'model.c'", "run past the end");
    hyocr_test_rmdir(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/safetensors/roundtrip", test_roundtrip);
    g_test_add_func("/safetensors/unaligned", test_unaligned);
    g_test_add_func("/safetensors/bf16-edges", test_bf16_edges);
    g_test_add_func("/safetensors/f16-edges", test_f16_edges);
#define FX(path, fn) g_test_add(path, fixture, NULL, fx_setup, fn, fx_teardown)
    FX("/safetensors/truncated", test_truncated);
    FX("/safetensors/offsets-past-end", test_offsets_past_end);
    FX("/safetensors/header-longer-than-file", test_header_longer_than_file);
    FX("/safetensors/header-over-limit", test_header_over_limit);
    FX("/safetensors/tiny-file", test_tiny_file);
    FX("/safetensors/missing-file", test_missing_file);
    FX("/safetensors/not-json", test_not_json);
    FX("/safetensors/overlap", test_overlap);
    FX("/safetensors/size-mismatch", test_size_mismatch);
    FX("/safetensors/bad-entries", test_bad_entries);
    FX("/safetensors/corruption-sweep", test_corruption_sweep);
    g_test_add_func("/safetensors/shards", test_shards_ok);
    g_test_add_func("/safetensors/release", test_release);
    g_test_add_func("/safetensors/index-preferred", test_index_preferred);
    g_test_add_func("/safetensors/index-errors", test_index_errors);
    return g_test_run();
}
