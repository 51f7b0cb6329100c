/* hyocr-gtk — memory gauge. */
#include "hyocr-vram-gauge-private.h"
#include <glib/gi18n.h>

struct _HyocrVramGauge {
    GtkWidget      parent_instance;
    GtkWidget     *button;
    GtkLabel      *short_label;
    GtkLevelBar   *level_bar;
    GtkLabel      *device_label, *used_value, *app_value, *engine_label, *weights_value, *kv_value,
                  *workspace_value, *peak_value, *limit_label;
    hyocr_mem_info figures;
    int64_t        app;
    guint          n_updates;
};

G_DEFINE_FINAL_TYPE(HyocrVramGauge, hyocr_vram_gauge, GTK_TYPE_WIDGET)

static char *fmt(int64_t bytes)
{
    return g_format_size_full((guint64)MAX(bytes, 0), G_FORMAT_SIZE_IEC_UNITS);
}

static void set_bytes(GtkLabel *label, int64_t bytes)
{
    g_autofree char *s = fmt(bytes);
    gtk_label_set_text(label, s);
}

static void set_pair(GtkLabel *label, int64_t a, int64_t b)
{
    g_autofree char *sa = fmt(a), *sb = fmt(b);
    /* Translators: "used / total" amounts of memory */
    g_autofree char *s = g_strdup_printf(_("%s / %s"), sa, sb);
    gtk_label_set_text(label, s);
}

static int64_t engine_bytes(const hyocr_mem_info *m)
{
    return m->weights + m->kv_reserved + m->workspace;
}

/* The header shows what this app holds, the bar its share of the RAM or the card. */
static void set_short(HyocrVramGauge *self, const hyocr_mem_info *m, gboolean cpu)
{
    g_autofree char *app = fmt(self->app);
    /* Translators: the short gauge label: what this app holds, "RAM 430.2 MiB" or "GPU 2.1 GiB" */
    g_autofree char *s = g_strdup_printf(cpu ? _("RAM %s") : _("GPU %s"), app);
    gtk_label_set_text(self->short_label, s);
    gtk_level_bar_set_value(self->level_bar, m->total > 0 ? CLAMP((double)self->app / m->total, 0, 1) : 0);
}

static void set_limit_text(HyocrVramGauge *self, gboolean cpu, int64_t limit)
{
    g_autofree char *l = limit > 0 ? fmt(limit) : NULL;
    g_autofree char *s = limit > 0 ? g_strdup_printf(_("The engine may take at most %s (Preferences)."), l)
                                   : g_strdup(_("No memory limit is set."));
    if (cpu) {
        g_autofree char *both = g_strconcat(_("Running on the CPU: the figures are system memory (RAM)."), " ", s, NULL);
        gtk_label_set_text(self->limit_label, both);
    } else {
        gtk_label_set_text(self->limit_label, s);
    }
}

void hyocr_vram_gauge_set_figures(HyocrVramGauge *self, const hyocr_mem_info *m, gboolean cpu, int64_t limit,
                                  int64_t resident)
{
    g_return_if_fail(HYOCR_IS_VRAM_GAUGE(self));
    self->figures = *m;
    self->app = cpu ? resident : engine_bytes(m);
    self->n_updates++;
    gtk_widget_set_sensitive(self->button, TRUE);
    set_short(self, m, cpu);
    gtk_label_set_text(self->device_label, cpu ? _("RAM (running on the CPU)") : _("GPU memory"));
    set_pair(self->used_value, m->total - m->free, m->total);
    set_bytes(self->app_value, self->app);
    g_autofree char *engine = fmt(engine_bytes(m));
    g_autofree char *what = cpu ? g_strdup_printf(_("All this process holds; the engine's share is %s:"), engine)
                                : g_strdup(_("What the engine holds on the card:"));
    gtk_label_set_text(self->engine_label, what);
    set_bytes(self->weights_value, m->weights);
    set_pair(self->kv_value, m->kv_used, m->kv_reserved);
    set_bytes(self->workspace_value, m->workspace);
    set_bytes(self->peak_value, m->peak);
    set_limit_text(self, cpu, limit);
    g_autofree char *app = fmt(self->app), *used = fmt(m->total - m->free), *total = fmt(m->total);
    g_autofree char *tip = g_strdup_printf(cpu ? _("This app holds %s of RAM; all programs %s of %s")
                                               : _("This app holds %s on the GPU; all programs %s of %s"),
                                           app, used, total);
    gtk_widget_set_tooltip_text(self->button, tip);
}

void hyocr_vram_gauge_set_unavailable(HyocrVramGauge *self, const char *reason)
{
    g_return_if_fail(HYOCR_IS_VRAM_GAUGE(self));
    self->figures = (hyocr_mem_info){ 0 };
    self->app = 0;
    gtk_label_set_text(self->short_label, _("No model"));
    gtk_level_bar_set_value(self->level_bar, 0);
    gtk_widget_set_tooltip_text(self->button, reason);
    gtk_widget_set_sensitive(self->button, FALSE);
}

guint hyocr_vram_gauge_get_n_updates(HyocrVramGauge *self) { return self->n_updates; }
const hyocr_mem_info *hyocr_vram_gauge_get_figures(HyocrVramGauge *self) { return &self->figures; }
int64_t hyocr_vram_gauge_get_app_bytes(HyocrVramGauge *self) { return self->app; }
const char *hyocr_vram_gauge_get_summary(HyocrVramGauge *self) { return gtk_label_get_text(self->short_label); }
const char *hyocr_vram_gauge_get_device_text(HyocrVramGauge *self) { return gtk_label_get_text(self->device_label); }

static void hyocr_vram_gauge_dispose(GObject *object)
{
    gtk_widget_dispose_template(GTK_WIDGET(object), HYOCR_TYPE_VRAM_GAUGE);
    /* Unbound template children (the root box) are ours to unparent too. */
    GtkWidget *child;
    while ((child = gtk_widget_get_first_child(GTK_WIDGET(object)))) gtk_widget_unparent(child);
    G_OBJECT_CLASS(hyocr_vram_gauge_parent_class)->dispose(object);
}

static void hyocr_vram_gauge_class_init(HyocrVramGaugeClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
    object_class->dispose = hyocr_vram_gauge_dispose;
    gtk_widget_class_set_template_from_resource(widget_class, "/io/github/hyocr/Hyocr/hyocr-vram-gauge.ui");
    gtk_widget_class_bind_template_child(widget_class, HyocrVramGauge, button);
    gtk_widget_class_bind_template_child(widget_class, HyocrVramGauge, short_label);
    gtk_widget_class_bind_template_child(widget_class, HyocrVramGauge, level_bar);
    gtk_widget_class_bind_template_child(widget_class, HyocrVramGauge, device_label);
    gtk_widget_class_bind_template_child(widget_class, HyocrVramGauge, used_value);
    gtk_widget_class_bind_template_child(widget_class, HyocrVramGauge, app_value);
    gtk_widget_class_bind_template_child(widget_class, HyocrVramGauge, engine_label);
    gtk_widget_class_bind_template_child(widget_class, HyocrVramGauge, weights_value);
    gtk_widget_class_bind_template_child(widget_class, HyocrVramGauge, kv_value);
    gtk_widget_class_bind_template_child(widget_class, HyocrVramGauge, workspace_value);
    gtk_widget_class_bind_template_child(widget_class, HyocrVramGauge, peak_value);
    gtk_widget_class_bind_template_child(widget_class, HyocrVramGauge, limit_label);
    gtk_widget_class_set_layout_manager_type(widget_class, GTK_TYPE_BIN_LAYOUT);
    gtk_widget_class_set_css_name(widget_class, "hyocr-vram-gauge");
}

static void hyocr_vram_gauge_init(HyocrVramGauge *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    hyocr_vram_gauge_set_unavailable(self, _("No model is loaded"));
}
