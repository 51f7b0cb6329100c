/* hyocr-gtk — preview with spotting boxes. */
#include "hyocr-image-view-private.h"

struct _HyocrImageView {
    GtkWidget   parent_instance;
    GdkTexture *texture;
    GPtrArray  *lines;
    int         highlight;
};

G_DEFINE_FINAL_TYPE(HyocrImageView, hyocr_image_view, GTK_TYPE_WIDGET)

enum { PROP_0, PROP_TEXTURE, PROP_HIGHLIGHT, N_PROPS };
static GParamSpec *props[N_PROPS];

/* The texture's rectangle inside the widget: scaled to fit (never up beyond 2×,
 * so a tiny crop stays sharp-edged rather than blown up), centred. */
static gboolean image_rect(HyocrImageView *self, graphene_rect_t *out)
{
    if (!self->texture) return FALSE;
    double w = gtk_widget_get_width(GTK_WIDGET(self)), h = gtk_widget_get_height(GTK_WIDGET(self));
    double tw = gdk_texture_get_width(self->texture), th = gdk_texture_get_height(self->texture);
    if (w <= 0 || h <= 0 || tw <= 0 || th <= 0) return FALSE;
    double s = MIN(MIN(w / tw, h / th), 2.0);
    graphene_rect_init(out, (float)((w - tw * s) / 2), (float)((h - th * s) / 2), (float)(tw * s), (float)(th * s));
    return TRUE;
}

#define BOX_PAD 2.f   /* the border sits just outside the glyphs, not across them */

static void box_rect(const graphene_rect_t *img, const HyocrSpotLine *l, graphene_rect_t *out)
{
    float sx = img->size.width / 1000.f, sy = img->size.height / 1000.f;
    graphene_rect_init(out, img->origin.x + l->x1 * sx - BOX_PAD, img->origin.y + l->y1 * sy - BOX_PAD,
                       MAX(1.f, (l->x2 - l->x1) * sx) + 2 * BOX_PAD, MAX(1.f, (l->y2 - l->y1) * sy) + 2 * BOX_PAD);
}

static GdkRGBA accent_color(HyocrImageView *self)
{
    GdkRGBA c = { 0.21f, 0.52f, 0.89f, 1.f };   /* Adwaita blue, if the theme has no accent */
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    gtk_style_context_lookup_color(gtk_widget_get_style_context(GTK_WIDGET(self)), "accent_bg_color", &c);
    G_GNUC_END_IGNORE_DEPRECATIONS
    return c;
}

static void draw_box(GtkSnapshot *snapshot, const graphene_rect_t *r, GdkRGBA color, gboolean highlighted)
{
    GskRoundedRect rr;
    gsk_rounded_rect_init_from_rect(&rr, r, 2.f);
    GdkRGBA fill = color;
    fill.alpha = highlighted ? 0.22f : 0.06f;
    gtk_snapshot_append_color(snapshot, &fill, r);
    float width = highlighted ? 2.5f : 1.f;
    float widths[4] = { width, width, width, width };
    GdkRGBA colors[4] = { color, color, color, color };
    gtk_snapshot_append_border(snapshot, &rr, widths, colors);
}

static void hyocr_image_view_snapshot(GtkWidget *widget, GtkSnapshot *snapshot)
{
    HyocrImageView *self = HYOCR_IMAGE_VIEW(widget);
    graphene_rect_t img;
    if (!image_rect(self, &img)) return;
    gtk_snapshot_append_texture(snapshot, self->texture, &img);
    if (!self->lines) return;
    GdkRGBA accent = accent_color(self);
    for (guint i = 0; i < self->lines->len; i++) {
        graphene_rect_t r;
        box_rect(&img, g_ptr_array_index(self->lines, i), &r);
        draw_box(snapshot, &r, accent, (int)i == self->highlight);
    }
}

static void hyocr_image_view_measure(GtkWidget *widget, GtkOrientation orientation, int for_size, int *minimum,
                                     int *natural, int *minimum_baseline, int *natural_baseline)
{
    HyocrImageView *self = HYOCR_IMAGE_VIEW(widget);
    *minimum = 64;
    *natural = 64;
    if (self->texture) {
        int size = orientation == GTK_ORIENTATION_HORIZONTAL ? gdk_texture_get_width(self->texture)
                                                             : gdk_texture_get_height(self->texture);
        *natural = MAX(64, MIN(size, 720));
    }
}

static void hyocr_image_view_dispose(GObject *object)
{
    HyocrImageView *self = HYOCR_IMAGE_VIEW(object);
    g_clear_object(&self->texture);
    g_clear_pointer(&self->lines, g_ptr_array_unref);
    G_OBJECT_CLASS(hyocr_image_view_parent_class)->dispose(object);
}

static void hyocr_image_view_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
    HyocrImageView *self = HYOCR_IMAGE_VIEW(object);
    switch (prop_id) {
    case PROP_TEXTURE: g_value_set_object(value, self->texture); break;
    case PROP_HIGHLIGHT: g_value_set_int(value, self->highlight); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void hyocr_image_view_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
    HyocrImageView *self = HYOCR_IMAGE_VIEW(object);
    switch (prop_id) {
    case PROP_TEXTURE: hyocr_image_view_set_texture(self, g_value_get_object(value)); break;
    case PROP_HIGHLIGHT: hyocr_image_view_set_highlight(self, g_value_get_int(value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void hyocr_image_view_class_init(HyocrImageViewClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
    object_class->dispose = hyocr_image_view_dispose;
    object_class->get_property = hyocr_image_view_get_property;
    object_class->set_property = hyocr_image_view_set_property;
    widget_class->snapshot = hyocr_image_view_snapshot;
    widget_class->measure = hyocr_image_view_measure;
    GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY;
    props[PROP_TEXTURE] = g_param_spec_object("texture", NULL, NULL, GDK_TYPE_TEXTURE, rw);
    props[PROP_HIGHLIGHT] = g_param_spec_int("highlight", NULL, NULL, -1, G_MAXINT, -1, rw);
    g_object_class_install_properties(object_class, N_PROPS, props);
    gtk_widget_class_set_css_name(widget_class, "hyocr-image-view");
    gtk_widget_class_set_accessible_role(widget_class, GTK_ACCESSIBLE_ROLE_IMG);
}

/* The smallest box under the point: lines nest (a table cell inside a row). */
static int box_at(HyocrImageView *self, double x, double y)
{
    int best = -1;
    float best_area = G_MAXFLOAT;
    graphene_rect_t r;
    for (guint i = 0; i < hyocr_image_view_get_n_boxes(self); i++) {
        if (!hyocr_image_view_get_box_bounds(self, i, &r) ||
            !graphene_rect_contains_point(&r, &GRAPHENE_POINT_INIT((float)x, (float)y)))
            continue;
        float area = r.size.width * r.size.height;
        if (area < best_area) {
            best_area = area;
            best = (int)i;
        }
    }
    return best;
}

static void on_motion(GtkEventControllerMotion *motion, double x, double y, HyocrImageView *self)
{
    hyocr_image_view_set_highlight(self, box_at(self, x, y));
}

static void on_leave(GtkEventControllerMotion *motion, HyocrImageView *self)
{
    hyocr_image_view_set_highlight(self, -1);
}

static void hyocr_image_view_init(HyocrImageView *self)
{
    self->highlight = -1;
    gtk_widget_set_overflow(GTK_WIDGET(self), GTK_OVERFLOW_HIDDEN);
    GtkEventController *motion = gtk_event_controller_motion_new();
    g_signal_connect(motion, "enter", G_CALLBACK(on_motion), self);
    g_signal_connect(motion, "motion", G_CALLBACK(on_motion), self);
    g_signal_connect(motion, "leave", G_CALLBACK(on_leave), self);
    gtk_widget_add_controller(GTK_WIDGET(self), motion);
}

void hyocr_image_view_set_texture(HyocrImageView *self, GdkTexture *texture)
{
    g_return_if_fail(HYOCR_IS_IMAGE_VIEW(self));
    if (!g_set_object(&self->texture, texture)) return;
    gtk_widget_queue_resize(GTK_WIDGET(self));
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_TEXTURE]);
}

void hyocr_image_view_set_lines(HyocrImageView *self, GPtrArray *lines)
{
    g_return_if_fail(HYOCR_IS_IMAGE_VIEW(self));
    if (lines) g_ptr_array_ref(lines);
    g_clear_pointer(&self->lines, g_ptr_array_unref);
    self->lines = lines;
    if (self->highlight >= (int)hyocr_image_view_get_n_boxes(self)) hyocr_image_view_set_highlight(self, -1);
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

guint hyocr_image_view_get_n_boxes(HyocrImageView *self)
{
    return self->lines ? self->lines->len : 0;
}

void hyocr_image_view_set_highlight(HyocrImageView *self, int index)
{
    g_return_if_fail(HYOCR_IS_IMAGE_VIEW(self));
    if (index < -1) index = -1;
    if (self->highlight == index) return;
    self->highlight = index;
    gtk_widget_queue_draw(GTK_WIDGET(self));
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_HIGHLIGHT]);
}

int hyocr_image_view_get_highlight(HyocrImageView *self)
{
    return self->highlight;
}

gboolean hyocr_image_view_get_box_bounds(HyocrImageView *self, guint index, graphene_rect_t *out)
{
    graphene_rect_t img;
    if (!self->lines || index >= self->lines->len || !image_rect(self, &img)) return FALSE;
    box_rect(&img, g_ptr_array_index(self->lines, index), out);
    return TRUE;
}
