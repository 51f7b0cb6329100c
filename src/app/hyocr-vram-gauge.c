/* hyocr-gtk — memory gauge. */
#include "hyocr-vram-gauge-private.h"
#include <glib/gi18n.h>

struct _HyocrVramGauge {
    GtkWidget      parent_instance;
    GtkWidget     *button;
    GtkLabel      *short_label;
    GtkLevelBar   *level_bar;
    GtkLabel      *device_label, *used_value, *app_value, *weights_value, *kv_value, *workspace_value,
                  *peak_value, *limit_label;
    hyocr_mem_info figures;
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

static int64_t app_bytes(const hyocr_mem_info *m)
{
    return m->weights + m->kv_reserved + m->workspace;
}

static void set_short(HyocrVramGauge *self, const hyocr_mem_info *m, gboolean cpu)
{
    g_autofree char *used = fmt(m->total - m->free), *total = fmt(m->total);
    /* Translators: the short gauge label, "GPU 3.1 / 24.0 GiB" or "RAM 3.1 / 16.0 GiB" */
    g_autofree char *s = g_strdup_printf(cpu ? _("RAM %s / %s") : _("GPU %s / %s"), used, total);
    gtk_label_set_text(self->short_label, s);
    gtk_level_bar_set_value(self->level_bar, m->total > 0 ? CLAMP((double)(m->total - m->free) / m->total, 0, 1) : 0);
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

void hyocr_vram_gauge_set_figures(HyocrVramGauge *self, const hyocr_mem_info *m, gboolean cpu, int64_t limit)
{
    g_return_if_fail(HYOCR_IS_VRAM_GAUGE(self));
    self->figures = *m;
    self->n_updates++;
    gtk_widget_set_sensitive(self->button, TRUE);
    set_short(self, m, cpu);
    gtk_label_set_text(self->device_label, cpu ? _("CPU — system memory") : _("GPU memory"));
    set_pair(self->used_value, m->total - m->free, m->total);
    set_bytes(self->app_value, app_bytes(m));
    set_bytes(self->weights_value, m->weights);
    set_pair(self->kv_value, m->kv_used, m->kv_reserved);
    set_bytes(self->workspace_value, m->workspace);
    set_bytes(self->peak_value, m->peak);
    set_limit_text(self, cpu, limit);
    g_autofree char *app = fmt(app_bytes(m));
    g_autofree char *tip = g_strdup_printf(_("Memory in use; %s of it by this app"), app);
    gtk_widget_set_tooltip_text(self->button, tip);
}

void hyocr_vram_gauge_set_unavailable(HyocrVramGauge *self, const char *reason)
{
    g_return_if_fail(HYOCR_IS_VRAM_GAUGE(self));
    self->figures = (hyocr_mem_info){ 0 };
    gtk_label_set_text(self->short_label, _("No model"));
    gtk_level_bar_set_value(self->level_bar, 0);
    gtk_widget_set_tooltip_text(self->button, reason);
    gtk_widget_set_sensitive(self->button, FALSE);
}

guint hyocr_vram_gauge_get_n_updates(HyocrVramGauge *self) { return self->n_updates; }
const hyocr_mem_info *hyocr_vram_gauge_get_figures(HyocrVramGauge *self) { return &self->figures; }
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
