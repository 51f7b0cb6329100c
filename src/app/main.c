/* hyocr-gtk — entry point. */
#include "hyocr-application.h"
#include "hyocr-build-config.h"
#include <glib/gi18n.h>
#include <locale.h>

/* GSettings aborts the process when a schema is missing. Started from the build
 * tree, the app uses the build's schema; elsewhere without one it says what to do. */
static gboolean settings_schema_found(void)
{
    g_autofree char *root = hyocr_uninstalled_build_root();
    if (root && !g_getenv("GSETTINGS_SCHEMA_DIR")) {
        g_autofree char *dir = g_build_filename(root, "data", NULL);
        g_setenv("GSETTINGS_SCHEMA_DIR", dir, TRUE);
    }
    GSettingsSchemaSource *source = g_settings_schema_source_get_default();
    g_autoptr(GSettingsSchema) schema = source ? g_settings_schema_source_lookup(source, HYOCR_APP_ID, TRUE) : NULL;
    if (schema) return TRUE;
    g_printerr(_("hyocr-gtk: the settings schema %s is not installed. Install the app (meson install -C build), "
                 "or run it from its build tree (meson devenv -C build hyocr-gtk).\n"),
               HYOCR_APP_ID);
    return FALSE;
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    hyocr_i18n_bind();
    textdomain(GETTEXT_PACKAGE);
    if (!settings_schema_found()) return 1;
    g_autoptr(HyocrApplication) app = hyocr_application_new(G_APPLICATION_DEFAULT_FLAGS);
    return g_application_run(G_APPLICATION(app), argc, argv);
}
