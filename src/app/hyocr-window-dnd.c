/* hyocr-gtk — the window-wide drop target: files from a file manager arrive
 * as a GdkFileList, images from other apps (a browser, an image viewer) as a
 * GdkTexture. A hint covers the window while something hovers. */
#include "hyocr-window-private.h"
#include <glib/gi18n.h>

static void set_hover(HyocrWindow *self, gboolean hover)
{
    gtk_widget_set_visible(self->drop_hint, hover);
    if (hover) gtk_widget_add_css_class(GTK_WIDGET(self), "drop-hover");
    else gtk_widget_remove_css_class(GTK_WIDGET(self), "drop-hover");
}

static GdkDragAction on_enter(GtkDropTarget *target, double x, double y, HyocrWindow *self)
{
    set_hover(self, TRUE);
    return GDK_ACTION_COPY;
}

static void on_leave(GtkDropTarget *target, HyocrWindow *self)
{
    set_hover(self, FALSE);
}

static gboolean drop_files(HyocrWindow *self, GdkFileList *list)
{
    g_autoptr(GPtrArray) arr = g_ptr_array_new();
    for (GSList *l = gdk_file_list_get_files(list), *it = l; it; it = it->next) g_ptr_array_add(arr, it->data);
    return hyocr_window_add_files(self, (GFile **)arr->pdata, arr->len) > 0;
}

static gboolean on_drop(GtkDropTarget *target, const GValue *value, double x, double y, HyocrWindow *self)
{
    set_hover(self, FALSE);
    if (G_VALUE_HOLDS(value, GDK_TYPE_FILE_LIST)) return drop_files(self, g_value_get_boxed(value));
    if (G_VALUE_HOLDS(value, GDK_TYPE_TEXTURE))
        return hyocr_window_add_texture(self, g_value_get_object(value), _("Dropped image"));
    hyocr_window_toast(self, _("Only images can be dropped here"));
    return FALSE;
}

void hyocr_window_setup_drop(HyocrWindow *self)
{
    /* File lists first: a file manager offers both, and the file keeps its name. */
    GType types[] = { GDK_TYPE_FILE_LIST, GDK_TYPE_TEXTURE };
    self->drop_target = gtk_drop_target_new(G_TYPE_INVALID, GDK_ACTION_COPY);
    gtk_drop_target_set_gtypes(self->drop_target, types, G_N_ELEMENTS(types));
    g_signal_connect(self->drop_target, "enter", G_CALLBACK(on_enter), self);
    g_signal_connect(self->drop_target, "leave", G_CALLBACK(on_leave), self);
    g_signal_connect(self->drop_target, "drop", G_CALLBACK(on_drop), self);
    gtk_widget_add_controller(GTK_WIDGET(self), GTK_EVENT_CONTROLLER(self->drop_target));
}
