/* hyocr — Pillow-exact 8-bit resampling (BICUBIC for the processor, LANCZOS for the optional
 * max_side pre-scale, whose size rule lives here too), smart_resize and the processor's
 * pixel_values (spec §3.2–3.4).
 *
 * Resampling follows Pillow's libImaging/Resample.c semantics: separable passes, horizontal
 * first, a pass skipped when its dimension is unchanged; per output index the filter is
 * evaluated in double, normalised by its sum, quantised to 22 fractional bits, and the 8-bit
 * result is rounded and clipped after each pass. Bit-exactness depends on evaluating the
 * kernel polynomials in the same order as Pillow (Horner form), so FMA contraction, which would
 * change the rounding of those doubles, is switched off for this file. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "resize.h"
#include "hostmem.h"
#include "error.h"
#include "i18n.h"

#include <math.h>
#include <string.h>

#define PRECISION_BITS 22   /* 32 − 8 − 2: room for 8-bit samples and filter overshoot in int32 */

typedef struct {
    double (*eval)(double x);
    double support;
} resample_filter;

/* Keys' cubic with a = −0.5, written in the Horner order Pillow evaluates. */
static double filter_bicubic(double x)
{
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

static double sinc(double x)
{
    if (x == 0.0) return 1.0;
    x *= M_PI;
    return sin(x) / x;
}

/* The window is half-open [−3, 3), as in Pillow. */
static double filter_lanczos(double x)
{
    return -3.0 <= x && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0;
}

/* ---------------------------------------------------------------------- row parallelism
 *
 * A 12-megapixel phone photo takes ~200 ms per pass on one core; rows are independent in
 * every pass, so the passes split their output rows over a few threads. Each output value is
 * computed exactly as before, so results do not depend on the thread count. */

#define PAR_MAX_THREADS 8
#define PAR_MIN_BYTES   (1 << 20)   /* below this a thread costs more than it saves */

typedef void (*rows_fn)(void *ctx, int r0, int r1);

typedef struct {
    rows_fn fn;
    void   *ctx;
    int     r0, r1;
} rows_part;

static gpointer rows_thread(gpointer data)
{
    rows_part *p = data;
    p->fn(p->ctx, p->r0, p->r1);
    return NULL;
}

/* Runs fn over [0, n) in contiguous parts on up to n_threads threads (0: the cores);
 * bytes is the work's size, for the threshold. */
static void parallel_rows(int n, size_t bytes, int n_threads, rows_fn fn, void *ctx)
{
    int k = n_threads > 0 ? n_threads : (int)g_get_num_processors();
    k = CLAMP(k, 1, PAR_MAX_THREADS);
    if (bytes < PAR_MIN_BYTES || k < 2 || n < 2 * k) {
        fn(ctx, 0, n);
        return;
    }
    rows_part parts[PAR_MAX_THREADS];
    GThread *threads[PAR_MAX_THREADS] = { 0 };
    for (int i = 0; i < k; i++) {
        parts[i] = (rows_part){ fn, ctx, (int)((int64_t)n * i / k), (int)((int64_t)n * (i + 1) / k) };
        /* The first part runs here; a thread that cannot start leaves its part to us. */
        if (i > 0) threads[i] = g_thread_try_new("hyocr-resize", rows_thread, &parts[i], NULL);
    }
    fn(ctx, parts[0].r0, parts[0].r1);
    for (int i = 1; i < k; i++) {
        if (threads[i]) g_thread_join(threads[i]);
        else fn(ctx, parts[i].r0, parts[i].r1);
    }
}

static const resample_filter BICUBIC = { filter_bicubic, 2.0 };
static const resample_filter LANCZOS = { filter_lanczos, 3.0 };

/* Per output index: first input index, tap count, and ksize quantised weights. */
typedef struct {
    int      ksize;
    int     *bounds;   /* [out][2] = xmin, n */
    int32_t *k;        /* [out][ksize] */
} taps;

static void taps_clear(taps *t)
{
    g_free(t->bounds);
    g_free(t->k);
    memset(t, 0, sizeof *t);
}

static int32_t quantise(double w)
{
    double s = w * (1 << PRECISION_BITS);
    return (int32_t)(w < 0 ? -0.5 + s : 0.5 + s);
}

static bool taps_init(taps *t, int in, int out, const resample_filter *f)
{
    double scale = (double)in / out;
    double filterscale = scale < 1.0 ? 1.0 : scale;
    double support = f->support * filterscale;
    int ksize = (int)ceil(support) * 2 + 1;
    double inv = 1.0 / filterscale;   /* Pillow multiplies by the reciprocal; dividing rounds differently */
    memset(t, 0, sizeof *t);
    t->ksize = ksize;
    t->bounds = g_try_new(int, (size_t)out * 2);
    t->k = g_try_new0(int32_t, (size_t)out * ksize);
    double *w = g_try_new(double, ksize);
    if (!t->bounds || !t->k || !w) {
        g_free(w);
        taps_clear(t);
        return false;
    }
    for (int i = 0; i < out; i++) {
        double center = (i + 0.5) * scale;
        int lo = (int)(center - support + 0.5);
        int hi = (int)(center + support + 0.5);
        lo = MAX(lo, 0);
        hi = MIN(hi, in);
        int n = MIN(hi - lo, ksize);
        double sum = 0.0;
        for (int j = 0; j < n; j++) {
            w[j] = f->eval((j + lo - center + 0.5) * inv);
            sum += w[j];
        }
        int32_t *k = t->k + (size_t)i * ksize;
        for (int j = 0; j < n; j++)
            k[j] = quantise(sum != 0.0 ? w[j] / sum : w[j]);
        t->bounds[2 * i] = lo;
        t->bounds[2 * i + 1] = MAX(n, 0);
    }
    g_free(w);
    return true;
}

static inline uint8_t clip8(int32_t acc)
{
    int32_t v = acc >> PRECISION_BITS;   /* arithmetic shift: negatives stay negative */
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Rows [y0, y0 + nrows) of src (width sw) → dst (width dw, nrows rows). */
static void pass_horizontal(const uint8_t *src, int sw, int y0, int nrows, uint8_t *dst, int dw,
                            const taps *t)
{
    const int32_t half = 1 << (PRECISION_BITS - 1);
    for (int y = 0; y < nrows; y++) {
        const uint8_t *line = src + (size_t)(y0 + y) * sw * 3;
        uint8_t *o = dst + (size_t)y * dw * 3;
        for (int x = 0; x < dw; x++, o += 3) {
            const int32_t *k = t->k + (size_t)x * t->ksize;
            const uint8_t *p = line + (size_t)t->bounds[2 * x] * 3;
            int n = t->bounds[2 * x + 1];
            int32_t r = half, g = half, b = half;
            for (int j = 0; j < n; j++, p += 3) {
                r += p[0] * k[j];
                g += p[1] * k[j];
                b += p[2] * k[j];
            }
            o[0] = clip8(r);
            o[1] = clip8(g);
            o[2] = clip8(b);
        }
    }
}

typedef struct {
    const uint8_t *src;
    int            sw, y0, dw;
    uint8_t       *dst;
    const taps    *t;
} hpass;

static void hpass_rows(void *ctx, int r0, int r1)
{
    const hpass *h = ctx;
    pass_horizontal(h->src, h->sw, h->y0 + r0, r1 - r0, h->dst + (size_t)r0 * h->dw * 3, h->dw, h->t);
}

/* Whole rows at a time into an int32 accumulator row: the same sums as Pillow's per-pixel
 * loop (integer addition), but contiguous and vectorisable. */
static void pass_vertical(const uint8_t *src, int w, uint8_t *dst, int y0, int y1, const taps *t, int32_t *acc)
{
    const int32_t half = 1 << (PRECISION_BITS - 1);
    size_t n3 = (size_t)w * 3;
    for (int y = y0; y < y1; y++) {
        const int32_t *k = t->k + (size_t)y * t->ksize;
        int lo = t->bounds[2 * y], n = t->bounds[2 * y + 1];
        for (size_t i = 0; i < n3; i++)
            acc[i] = half;
        for (int j = 0; j < n; j++) {
            const uint8_t *row = src + (size_t)(lo + j) * n3;
            int32_t kj = k[j];
            for (size_t i = 0; i < n3; i++)
                acc[i] += row[i] * kj;
        }
        uint8_t *o = dst + (size_t)y * n3;
        for (size_t i = 0; i < n3; i++)
            o[i] = clip8(acc[i]);
    }
}

typedef struct {
    const uint8_t *src;
    int            w;
    uint8_t       *dst;
    const taps    *t;
    bool           oom;
} vpass;

static void vpass_rows(void *ctx, int r0, int r1)
{
    vpass *v = ctx;
    int32_t *acc = g_try_new(int32_t, (size_t)v->w * 3);
    if (!acc) {
        v->oom = true;   /* a benign race: every writer stores true */
        return;
    }
    pass_vertical(v->src, v->w, v->dst, r0, r1, v->t, acc);
    g_free(acc);
}

static hyocr_image *image_copy(const hyocr_image *src)
{
    hyocr_image *out = hyocr_image_new(src->width, src->height);
    if (out)
        memcpy(out->rgb, src->rgb, (size_t)src->width * src->height * 3);
    return out;
}

/* The horizontal pass only produces the rows the vertical pass reads, as Pillow does. */
static hyocr_image *resample(const hyocr_image *src, int w, int h, const resample_filter *f, int n_threads)
{
    if (!src || w < 1 || h < 1)
        return NULL;
    bool need_h = w != src->width, need_v = h != src->height;
    if (!need_h && !need_v)
        return image_copy(src);
    taps th = { 0 }, tv = { 0 };
    hyocr_image *out = NULL, *mid = NULL;
    int first = 0, last = src->height;
    if (need_v) {
        if (!taps_init(&tv, src->height, h, f)) goto done;
        first = tv.bounds[0];
        last = tv.bounds[2 * (h - 1)] + tv.bounds[2 * (h - 1) + 1];
    }
    if (need_h) {
        if (!taps_init(&th, src->width, w, f)) goto done;
        mid = hyocr_image_new(w, last - first);
        if (!mid) goto done;
        hpass hp = { src->rgb, src->width, first, w, mid->rgb, &th };
        parallel_rows(last - first, (size_t)(last - first) * w * 3, n_threads, hpass_rows, &hp);
        if (!need_v) {
            out = mid;
            mid = NULL;
            goto done;
        }
        for (int y = 0; y < h; y++)
            tv.bounds[2 * y] -= first;
    }
    out = hyocr_image_new(w, h);
    if (!out) goto done;
    vpass vp = { need_h ? mid->rgb : src->rgb, w, out->rgb, &tv, false };
    parallel_rows(h, (size_t)w * h * 3, n_threads, vpass_rows, &vp);
    if (vp.oom) {
        hyocr_image_free(out);
        out = NULL;
    }
done:
    taps_clear(&th);
    taps_clear(&tv);
    hyocr_image_free(mid);
    return out;
}

hyocr_image *hyocr_image_resize_bicubic(const hyocr_image *src, int width, int height, int n_threads)
{
    return resample(src, width, height, &BICUBIC, n_threads);
}

hyocr_image *hyocr_image_resize_lanczos(const hyocr_image *src, int width, int height, int n_threads)
{
    return resample(src, width, height, &LANCZOS, n_threads);
}

/* ------------------------------------------------------------------------ the max_side pre-scale */

/* Pillow's thumbnail keeps the long edge at the bound and picks floor or ceil for the other
 * edge, whichever gives the closer aspect (floor on a tie), never below 1. */
static int closest_edge(double exact, double aspect, int fixed, bool other_is_width)
{
    double lo = floor(exact), hi = ceil(exact);
    double dlo, dhi;
    if (other_is_width) {
        dlo = fabs(aspect - lo / fixed);
        dhi = fabs(aspect - hi / fixed);
    } else {
        dlo = lo == 0 ? 0 : fabs(aspect - fixed / lo);
        dhi = hi == 0 ? 0 : fabs(aspect - fixed / hi);
    }
    double pick = dhi < dlo ? hi : lo;
    return pick < 1 ? 1 : (int)pick;
}

bool hyocr_image_fit_size(int width, int height, int max_side, int *out_width, int *out_height)
{
    *out_width = width;
    *out_height = height;
    if (max_side < 1 || (width <= max_side && height <= max_side))
        return false;
    double aspect = (double)width / height;
    if (1.0 >= aspect) {   /* portrait or square: height is the long edge */
        *out_height = max_side;
        *out_width = closest_edge(max_side * aspect, aspect, max_side, true);
    } else {
        *out_width = max_side;
        *out_height = closest_edge(max_side / aspect, aspect, max_side, false);
    }
    return *out_width != width || *out_height != height;
}

/* A plain LANCZOS resize to thumbnail()'s size: its reducing_gap shortcuts (JPEG draft
 * mode, box reduce) are not reproduced, so this is the "fair" resample. */
bool hyocr_image_fit(const hyocr_image *src, int max_side, int n_threads, hyocr_image **out, GError **error)
{
    int w, h;
    *out = NULL;
    if (!hyocr_image_fit_size(src->width, src->height, max_side, &w, &h)) return true;
    *out = hyocr_image_resize_lanczos(src, w, h, n_threads);
    if (!*out)
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, _("out of memory shrinking a %d×%d image to %d×%d"),
                    src->width, src->height, w, h);
    return *out != NULL;
}

/* ------------------------------------------------------------------------ smart_resize */

/* Python's round() on a float: half to even, which is nearbyint() in the default mode. */
static int64_t round_half_even(double x) { return (int64_t)nearbyint(x); }

bool hyocr_smart_resize(int height, int width, int factor, int64_t min_pixels, int64_t max_pixels,
                        int *out_height, int *out_width, GError **error)
{
    if (height < 1 || width < 1) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IMAGE, _("image is empty (%d×%d pixels)"), width, height);
        return false;
    }
    if (factor < 1 || max_pixels < 1 || min_pixels < 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("smart_resize: bad parameters (factor %d, min_pixels %lld, max_pixels %lld)"),
                    factor, (long long)min_pixels, (long long)max_pixels);
        return false;
    }
    double ratio = (double)MAX(height, width) / MIN(height, width);
    if (ratio > 200) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IMAGE, _("image is %d×%d pixels: aspect ratio %.1f is "
                      "over the model's limit of 200; crop it or pad the short side"), width, height, ratio);
        return false;
    }
    int64_t h = round_half_even((double)height / factor) * factor;
    int64_t w = round_half_even((double)width / factor) * factor;
    double area = (double)((int64_t)height * width);
    if (h * w > max_pixels) {
        double beta = sqrt(area / (double)max_pixels);
        h = MAX(factor, (int64_t)floor((double)height / beta / factor) * factor);
        w = MAX(factor, (int64_t)floor((double)width / beta / factor) * factor);
    } else if (h * w < min_pixels) {
        double beta = sqrt((double)min_pixels / area);
        h = (int64_t)ceil((double)height * beta / factor) * factor;
        w = (int64_t)ceil((double)width * beta / factor) * factor;
    }
    if (h < 1 || w < 1 || h > INT_MAX || w > INT_MAX) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IMAGE,
                    _("image is %d×%d pixels: cannot be resized within %lld..%lld pixels (got %lld×%lld)"),
                    width, height, (long long)min_pixels, (long long)max_pixels, (long long)w, (long long)h);
        return false;
    }
    *out_height = (int)h;
    *out_width = (int)w;
    return true;
}

/* ------------------------------------------------------------------------ pixel_values */

void hyocr_pixels_free(hyocr_pixels *px)
{
    if (!px) return;
    if (px->cap) px->mem.give(px->mem.user, px->data, px->cap);
    else g_free(px->data);
    g_free(px);
}

static bool check_processor(const hyocr_processor_config *pc, GError **error)
{
    bool ok = pc && pc->patch_size > 0 && pc->merge_size > 0 && pc->temporal_patch_size >= 0 &&
              pc->patch_size <= 1024 && pc->merge_size <= 64 && pc->temporal_patch_size <= 16;
    for (int c = 0; ok && c < 3; c++)
        ok = pc->image_std[c] != 0.0f && isfinite(pc->image_std[c]) && isfinite(pc->image_mean[c]);
    if (!ok)
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG, _("image processor config is unusable "
                      "(patch_size %d, merge_size %d, temporal_patch_size %d, image_std %g %g %g); check "
                      "preprocessor_config.json"), pc ? pc->patch_size : 0, pc ? pc->merge_size : 0,
                    pc ? pc->temporal_patch_size : 0, pc ? pc->image_std[0] : 0.0,
                    pc ? pc->image_std[1] : 0.0, pc ? pc->image_std[2] : 0.0);
    return ok;
}

/* transformers rescales in float64 and stores float32, then normalises in float32:
 * p = f32(f32(f32(x · rescale) − mean) / std). 256 values per channel, so a table. */
static void build_lut(const hyocr_processor_config *pc, float lut[3][256])
{
    for (int c = 0; c < 3; c++)
        for (int x = 0; x < 256; x++) {
            float v = (float)((double)x * pc->rescale_factor);
            float centred = v - pc->image_mean[c];
            lut[c][x] = centred / pc->image_std[c];
        }
}

/* Row r·grid_w + c holds patch (r, c); inside it channel, then temporal copy, then y, then x
 * (spec §3.4). A single frame is repeated temporal_patch_size times, as the reference pads. */
static void pack_patches(const hyocr_image *img, int p, int tp, const float lut[3][256], float *out, int r0, int r1)
{
    int gw = img->width / p;
    out += (size_t)r0 * gw * 3 * tp * p * p;
    for (int r = r0; r < r1; r++)
        for (int c = 0; c < gw; c++)
            for (int ch = 0; ch < 3; ch++)
                for (int t = 0; t < tp; t++)
                    for (int y = 0; y < p; y++) {
                        const uint8_t *s = img->rgb + (((size_t)(r * p + y) * img->width) + (size_t)c * p) * 3 + ch;
                        for (int x = 0; x < p; x++)
                            *out++ = lut[ch][s[3 * x]];
                    }
}

typedef struct {
    const hyocr_image *img;
    int                p, tp;
    float              lut[3][256];
    float             *out;
} packing;

static void pack_rows(void *ctx, int r0, int r1)
{
    const packing *pk = ctx;
    pack_patches(pk->img, pk->p, pk->tp, (const float (*)[256])pk->lut, pk->out, r0, r1);
}

/* n_patches · patch_dim fp32 values, from px->mem where it gives them, or NULL (error set) */
static float *rows_alloc(hyocr_pixels *px, GError **error)
{
    size_t n = (size_t)px->n_patches, d = (size_t)px->patch_dim;
    bool fits = n <= SIZE_MAX / sizeof(float) / d;
    float *data = fits && px->mem.take ? px->mem.take(px->mem.user, n * d * sizeof(float), &px->cap) : NULL;
    if (data) return data;   /* pinned memory is not the heap's: no huge-page hint */
    px->cap = 0;
    data = fits ? g_try_new(float, n * d) : NULL;
    if (!data)
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, _("out of memory for the pixel values of a "
                      "%d×%d image (%zu patches)"), px->resized_width, px->resized_height, n);
    else
        hyocr_host_advise_huge(data, n * d * sizeof(float));
    return data;
}

/* px's rows from src, the values by pc's table */
static void rows_pack(const hyocr_pixels *px, const hyocr_image *src, const hyocr_processor_config *pc,
                      int n_threads)
{
    packing pk = { .img = src, .p = pc->patch_size, .tp = MAX(pc->temporal_patch_size, 1), .out = px->data };
    build_lut(pc, pk.lut);
    /* a fresh buffer's page faults are most of this pass (hostmem.h), and they parallelise too */
    parallel_rows(px->grid_h, (size_t)px->n_patches * px->patch_dim * sizeof(float), n_threads, pack_rows, &pk);
}

hyocr_pixels *hyocr_pixels_from_image(const hyocr_image *img, const hyocr_processor_config *pc, int n_threads,
                                      GError **error)
{
    return hyocr_pixels_from_image_in(img, pc, n_threads, NULL, error);
}

hyocr_pixels *hyocr_pixels_from_image_in(const hyocr_image *img, const hyocr_processor_config *pc, int n_threads,
                                         const hyocr_pixels_mem *mem, GError **error)
{
    if (!check_processor(pc, error))
        return NULL;
    int p = pc->patch_size, tp = MAX(pc->temporal_patch_size, 1);
    int rh, rw;
    if (!hyocr_smart_resize(img->height, img->width, p * pc->merge_size, pc->min_pixels, pc->max_pixels,
                            &rh, &rw, error))
        return NULL;
    g_autoptr(hyocr_image) resized = NULL;
    if (rh != img->height || rw != img->width) {
        resized = hyocr_image_resize_bicubic(img, rw, rh, n_threads);
        if (!resized) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, _("out of memory resizing a %d×%d image "
                          "to %d×%d"), img->width, img->height, rw, rh);
            return NULL;
        }
    }
    const hyocr_image *src = resized ? resized : img;
    size_t n_patches = (size_t)(rh / p) * (size_t)(rw / p);
    if (n_patches > INT_MAX) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, _("out of memory for the pixel values of a "
                      "%d×%d image (%zu patches)"), rw, rh, n_patches);
        return NULL;
    }
    g_autoptr(hyocr_pixels) px = g_new0(hyocr_pixels, 1);
    px->grid_t = 1;
    px->grid_h = rh / p;
    px->grid_w = rw / p;
    px->n_patches = (int)n_patches;
    px->patch_dim = 3 * tp * p * p;
    px->resized_width = rw;
    px->resized_height = rh;
    if (mem) px->mem = *mem;
    if (!(px->data = rows_alloc(px, error))) return NULL;
    rows_pack(px, src, pc, n_threads);
    return g_steal_pointer(&px);
}
