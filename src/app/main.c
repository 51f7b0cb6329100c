/* hyocr-gtk — entry point. */
#include "hyocr-application.h"
#include "hyocr-build-config.h"
#include <glib/gi18n.h>
#include <locale.h>

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    bindtextdomain(GETTEXT_PACKAGE, HYOCR_LOCALEDIR);
    bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
    textdomain(GETTEXT_PACKAGE);
    g_autoptr(HyocrApplication) app = hyocr_application_new(G_APPLICATION_DEFAULT_FLAGS);
    return g_application_run(G_APPLICATION(app), argc, argv);
}
