/* hyocr — where the programs find their catalogs. */
#include "hyocr.h"
#include "i18n.h"
#include <limits.h>
#include <stdlib.h>

char *hyocr_uninstalled_build_root(void)
{
    g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
    char root[PATH_MAX];
    if (!exe || !realpath(HYOCR_BUILD_ROOT, root)) return NULL;
    g_autofree char *prefix = g_strconcat(root, G_DIR_SEPARATOR_S, NULL);
    return g_str_has_prefix(exe, prefix) ? g_strdup(root) : NULL;
}

void hyocr_i18n_bind(void)
{
    const char *env = g_getenv("HYOCR_LOCALEDIR");
    g_autofree char *root = env && *env ? NULL : hyocr_uninstalled_build_root();
    g_autofree char *built = root ? g_build_filename(root, "po", NULL) : NULL;
    bindtextdomain(GETTEXT_PACKAGE, env && *env ? env : built ? built : HYOCR_LOCALEDIR);
    bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
}
