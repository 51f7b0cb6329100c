/* hyocr — first-run check of the NVIDIA driver stack (see gpu-check.h). */
#define _GNU_SOURCE
#include "gpu-check.h"
#include "i18n.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#define HYOCR_FLATPAK_OVERRIDE "flatpak override --user --device=dri io.github.hyocr.Hyocr"

static char *in_root(const char *root, const char *path)
{
    return g_build_filename(root, path, NULL);
}

static gboolean exists_in(const char *root, const char *path)
{
    g_autofree char *p = in_root(root, path);
    return g_file_test(p, G_FILE_TEST_EXISTS);
}

/* A driver version is digits and dots with at least one dot: "575.57.08", "470.256.02". */
static gboolean is_version(const char *s)
{
    gboolean dot = FALSE;
    if (!g_ascii_isdigit(*s)) return FALSE;
    for (; *s; s++) {
        if (*s == '.') dot = TRUE;
        else if (!g_ascii_isdigit(*s)) return FALSE;
    }
    return dot && s[-1] != '.';
}

/* "580" or "575.57.08": a minimum may name just the major version. */
static gboolean is_version_prefix(const char *s)
{
    g_autofree char *dotted = g_strconcat(s, ".0", NULL);
    return is_version(s) || is_version(dotted);
}

/* First version-shaped word of the file; the proprietary and the open kernel module
 * word their banner differently but both carry the version as its own word. */
static char *first_version_in_file(const char *path)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL)) return NULL;
    g_auto(GStrv) words = g_strsplit_set(text, " \t\n", -1);
    for (char **w = words; *w; w++)
        if (is_version(*w)) return g_strdup(*w);
    return NULL;
}

static char *kernel_driver_version(const char *root)
{
    g_autofree char *proc = in_root(root, "proc/driver/nvidia/version");
    char *v = first_version_in_file(proc);
    if (v) return v;
    g_autofree char *sys = in_root(root, "sys/module/nvidia/version");
    return first_version_in_file(sys);
}

static int count_gpu_nodes(const char *root)
{
    g_autofree char *dev = in_root(root, "dev");
    g_autoptr(GDir) dir = g_dir_open(dev, 0, NULL);
    int n = 0;
    for (const char *name; dir && (name = g_dir_read_name(dir));) {
        if (!g_str_has_prefix(name, "nvidia") || !name[6]) continue;
        const char *p = name + 6;
        while (g_ascii_isdigit(*p)) p++;
        if (!*p) n++;
    }
    return n;
}

/* "nvidia-575-57-08" → "575.57.08"; NULL for other GL extension folders (default, host…). */
static char *gl_extension_version(const char *name)
{
    if (!g_str_has_prefix(name, "nvidia-")) return NULL;
    g_autofree char *v = g_strdup(name + 7);
    g_strdelimit(v, "-", '.');
    return is_version(v) ? g_steal_pointer(&v) : NULL;
}

static void add_gl_extensions_of(const char *gl_dir, GPtrArray *out)
{
    g_autoptr(GDir) dir = g_dir_open(gl_dir, 0, NULL);
    for (const char *name; dir && (name = g_dir_read_name(dir));) {
        char *v = gl_extension_version(name);
        if (v) g_ptr_array_add(out, v);
    }
}

static int compare_strings(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(char *const *)a, *(char *const *)b);
}

/* Flatpak mounts the GL extensions under /usr/lib/<triplet>/GL/<subdirectory>. */
static char *find_gl_extensions(const char *root)
{
    g_autofree char *lib = in_root(root, "usr/lib");
    g_autoptr(GDir) dir = g_dir_open(lib, 0, NULL);
    g_autoptr(GPtrArray) found = g_ptr_array_new_with_free_func(g_free);
    for (const char *name; dir && (name = g_dir_read_name(dir));) {
        if (!g_str_has_suffix(name, "-linux-gnu")) continue;
        g_autofree char *gl = g_build_filename(lib, name, "GL", NULL);
        add_gl_extensions_of(gl, found);
    }
    if (found->len == 0) return NULL;
    g_ptr_array_sort(found, compare_strings);  /* GDir order is arbitrary */
    g_ptr_array_add(found, NULL);
    return g_strjoinv(", ", (char **)found->pdata);
}

gboolean hyocr_gpu_probe_libcuda(char **path, void *user_data)
{
    *path = NULL;
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        const char *msg = dlerror();
        *path = msg ? g_strdup(msg) : NULL;
        return FALSE;
    }
    struct link_map *map = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) {
        char *real = realpath(map->l_name, NULL);
        *path = g_strdup(real ? real : map->l_name);
        free(real);
    }
    dlclose(h);
    return TRUE;
}

/* ".../libcuda.so.575.57.08" → "575.57.08". */
static char *libcuda_version(const char *path)
{
    if (!path) return NULL;
    g_autofree char *base = g_path_get_basename(path);
    if (!g_str_has_prefix(base, "libcuda.so.")) return NULL;
    const char *v = base + strlen("libcuda.so.");
    return is_version(v) ? g_strdup(v) : NULL;
}

static void probe_libcuda(hyocr_gpu_report *r, const hyocr_gpu_check_options *o)
{
    hyocr_gpu_libcuda_probe probe = o && o->probe ? o->probe : hyocr_gpu_probe_libcuda;
    g_autofree char *path = NULL;
    r->have_libcuda = probe(&path, o ? o->probe_data : NULL);
    if (r->have_libcuda) r->userspace_version = libcuda_version(path);
}

/* Inside Flatpak the user-space driver can only come from a GL extension; when libcuda
 * did not tell its version, a mounted extension's stands in for it: the one matching the
 * kernel module when there is one, else the first (a mismatch). */
static void flatpak_userspace_version(hyocr_gpu_report *r)
{
    if (r->userspace_version || !r->gl_extensions) return;
    g_auto(GStrv) found = g_strsplit(r->gl_extensions, ", ", -1);
    for (char **v = found; *v; v++)
        if (g_strcmp0(*v, r->kernel_version) == 0) {
            r->userspace_version = g_strdup(*v);
            return;
        }
    r->userspace_version = g_strdup(found[0]);
}

static void gather(hyocr_gpu_report *r, const hyocr_gpu_check_options *o)
{
    const char *root = o && o->root && *o->root ? o->root : "/";
    r->in_flatpak = exists_in(root, ".flatpak-info");
    r->kernel_version = kernel_driver_version(root);
    r->have_driver = r->kernel_version != NULL;
    r->have_ctl = exists_in(root, "dev/nvidiactl");
    r->n_gpus = count_gpu_nodes(root);
    r->have_uvm = exists_in(root, "dev/nvidia-uvm");
    r->uvm_module_loaded = exists_in(root, "sys/module/nvidia_uvm");
    if (r->in_flatpak) r->gl_extensions = find_gl_extensions(root);
    probe_libcuda(r, o);
    if (r->in_flatpak) flatpak_userspace_version(r);
}

/* Numeric, part by part; only as many parts as the minimum has ("580" vs "575.57.08"). */
static gboolean version_older(const char *have, const char *min)
{
    g_auto(GStrv) a = g_strsplit(have, ".", -1);
    g_auto(GStrv) b = g_strsplit(min, ".", -1);
    for (int i = 0; b[i]; i++) {
        gint64 x = a[i] ? g_ascii_strtoll(a[i], NULL, 10) : 0, y = g_ascii_strtoll(b[i], NULL, 10);
        if (x != y) return x < y;
        if (!a[i]) break;
    }
    return FALSE;
}

const char *hyocr_gpu_min_driver_for_cuda(int cudart_version)
{
    /* NVIDIA's minor-version compatibility floors for Linux. */
    switch (cudart_version / 1000) {
    case 12: return "525.60.13";
    case 13: return "580";
    default: return NULL;
    }
}

static hyocr_gpu_status classify(const hyocr_gpu_report *r, const char *min_driver)
{
    if (!r->have_driver) return HYOCR_GPU_NO_DRIVER;
    if (!r->have_ctl || r->n_gpus == 0) return HYOCR_GPU_NO_DEVICE;
    if (!r->have_uvm) return HYOCR_GPU_NO_UVM;
    if (r->in_flatpak && !r->gl_extensions) return HYOCR_GPU_NO_GL_EXTENSION;
    if (r->userspace_version && g_strcmp0(r->userspace_version, r->kernel_version) != 0)
        return HYOCR_GPU_VERSION_MISMATCH;
    if (min_driver && is_version_prefix(min_driver) && version_older(r->kernel_version, min_driver))
        return HYOCR_GPU_DRIVER_TOO_OLD;
    if (!r->have_libcuda) return HYOCR_GPU_NO_LIBCUDA;
    return HYOCR_GPU_OK;
}

static char *no_device_detail(const hyocr_gpu_report *r)
{
    if (r->in_flatpak)
        return g_strdup_printf(_("The NVIDIA driver %s is loaded, but the app cannot see the GPU: it was "
                                 "started without access to graphics devices. Allow it with “%s” and "
                                 "start the app again. Until then hyocr runs on the CPU."),
                               r->kernel_version, HYOCR_FLATPAK_OVERRIDE);
    return g_strdup_printf(_("The NVIDIA driver %s is loaded, but /dev/nvidiactl or /dev/nvidia0 is "
                             "missing. Run “sudo nvidia-modprobe -c=0” or restart the computer. Until "
                             "then hyocr runs on the CPU."), r->kernel_version);
}

/* The device node is made by nvidia-modprobe (setuid) on the first CUDA call outside a
 * sandbox; inside Flatpak nothing can make it, so the user has to, on the host. */
static char *no_uvm_detail(const hyocr_gpu_report *r)
{
    if (r->uvm_module_loaded && r->in_flatpak)
        return g_strdup(_("The nvidia_uvm module is loaded, but its device /dev/nvidia-uvm does not exist "
                          "yet, and the app cannot create it from inside its sandbox. Run “sudo "
                          "nvidia-modprobe -u -c=0” on the host once, then start hyocr again. Until then "
                          "hyocr runs on the CPU."));
    if (r->uvm_module_loaded)
        return g_strdup(_("The nvidia_uvm module is loaded, but its device /dev/nvidia-uvm does not exist "
                          "yet. Run “sudo nvidia-modprobe -u -c=0” once, then start hyocr again. Until "
                          "then hyocr runs on the CPU."));
    if (r->in_flatpak)
        return g_strdup(_("CUDA needs the nvidia_uvm kernel module, which is not loaded, and the app cannot "
                          "load it from inside its sandbox. On the host, run “sudo modprobe nvidia-uvm && "
                          "sudo nvidia-modprobe -u -c=0”, and add nvidia-uvm to /etc/modules-load.d/ to "
                          "load it at every boot. Until then hyocr runs on the CPU."));
    return g_strdup(_("CUDA needs the nvidia_uvm kernel module, which is not loaded. Run “sudo modprobe "
                      "nvidia-uvm && sudo nvidia-modprobe -u -c=0”, and add nvidia-uvm to "
                      "/etc/modules-load.d/ to load it at every boot. Until then hyocr runs on the CPU."));
}

static char *mismatch_detail(const hyocr_gpu_report *r)
{
    if (r->in_flatpak)
        return g_strdup_printf(_("The host runs NVIDIA driver %s, but the Flatpak NVIDIA runtime is "
                                 "version %s. Run “flatpak update” to install the matching "
                                 "org.freedesktop.Platform.GL.nvidia extension. Until then hyocr runs "
                                 "on the CPU."), r->kernel_version, r->userspace_version);
    return g_strdup_printf(_("The NVIDIA kernel module is version %s, but the driver libraries are "
                             "version %s, which usually means the driver was updated without a "
                             "restart. Restart the computer. Until then hyocr runs on the CPU."),
                           r->kernel_version, r->userspace_version);
}

/* Flatpak names the extension after the driver version with dashes: 575.57.08 → 575-57-08. */
static char *no_gl_extension_detail(const hyocr_gpu_report *r)
{
    g_autofree char *dashed = g_strdup(r->kernel_version);
    g_strdelimit(dashed, ".", '-');
    return g_strdup_printf(_("The host runs NVIDIA driver %s, but the matching Flatpak runtime "
                             "org.freedesktop.Platform.GL.nvidia-%s is not installed. Run “flatpak "
                             "update”, or install it with “flatpak install flathub "
                             "org.freedesktop.Platform.GL.nvidia-%s”. Until then hyocr runs on the "
                             "CPU."), r->kernel_version, dashed, dashed);
}

static void describe(hyocr_gpu_report *r, const char *min_driver)
{
    switch (r->status) {
    case HYOCR_GPU_OK:
        r->title = g_strdup(_("NVIDIA GPU ready"));
        r->detail = g_strdup_printf(g_dngettext(GETTEXT_PACKAGE,
                                                "NVIDIA driver %s with %d GPU: hyocr can run on the GPU.",
                                                "NVIDIA driver %s with %d GPUs: hyocr can run on the GPU.",
                                                (gulong)r->n_gpus),
                                    r->kernel_version, r->n_gpus);
        break;
    case HYOCR_GPU_NO_DRIVER:
        r->title = g_strdup(_("No NVIDIA driver"));
        r->detail = g_strdup(_("No NVIDIA GPU driver is loaded, so hyocr runs on the CPU, which is much "
                               "slower. If this computer has an NVIDIA GPU, install NVIDIA’s driver from "
                               "your distribution and restart."));
        break;
    case HYOCR_GPU_NO_DEVICE:
        r->title = g_strdup(_("The GPU is not accessible"));
        r->detail = no_device_detail(r);
        break;
    case HYOCR_GPU_NO_UVM:
        r->title = g_strdup(_("The nvidia_uvm module is missing"));
        r->detail = no_uvm_detail(r);
        break;
    case HYOCR_GPU_NO_GL_EXTENSION:
        r->title = g_strdup(_("The Flatpak NVIDIA runtime is missing"));
        r->detail = no_gl_extension_detail(r);
        break;
    case HYOCR_GPU_NO_LIBCUDA:
        r->title = g_strdup(_("The CUDA driver library is missing"));
        r->detail = g_strdup_printf(_("The NVIDIA kernel driver %s is loaded, but libcuda.so.1 cannot be "
                                      "loaded. Install your distribution’s NVIDIA CUDA driver package "
                                      "(for example libcuda1 or nvidia-utils). Until then hyocr runs on "
                                      "the CPU."), r->kernel_version);
        break;
    case HYOCR_GPU_VERSION_MISMATCH:
        r->title = g_strdup(_("NVIDIA driver versions do not match"));
        r->detail = mismatch_detail(r);
        break;
    case HYOCR_GPU_DRIVER_TOO_OLD:
        r->title = g_strdup(_("The NVIDIA driver is too old"));
        r->detail = g_strdup_printf(_("This build of hyocr needs NVIDIA driver %s or newer, but the computer "
                                      "runs %s. Update the driver from your distribution and restart. Until "
                                      "then hyocr runs on the CPU."), min_driver, r->kernel_version);
        break;
    default:
        g_assert_not_reached();
    }
}

hyocr_gpu_report *hyocr_gpu_check(const hyocr_gpu_check_options *options)
{
    hyocr_gpu_report *r = g_new0(hyocr_gpu_report, 1);
    gather(r, options);
    r->status = classify(r, options ? options->min_driver : NULL);
    describe(r, options ? options->min_driver : NULL);
    return r;
}

void hyocr_gpu_report_free(hyocr_gpu_report *r)
{
    if (!r) return;
    g_free(r->kernel_version);
    g_free(r->userspace_version);
    g_free(r->gl_extensions);
    g_free(r->title);
    g_free(r->detail);
    g_free(r);
}

const char *hyocr_gpu_status_name(hyocr_gpu_status status)
{
    static const char *const names[HYOCR_GPU_STATUS_COUNT] = {
        [HYOCR_GPU_OK] = "ok",
        [HYOCR_GPU_NO_DRIVER] = "no-driver",
        [HYOCR_GPU_NO_DEVICE] = "no-device",
        [HYOCR_GPU_NO_UVM] = "no-uvm",
        [HYOCR_GPU_NO_GL_EXTENSION] = "no-gl-extension",
        [HYOCR_GPU_NO_LIBCUDA] = "no-libcuda",
        [HYOCR_GPU_VERSION_MISMATCH] = "version-mismatch",
        [HYOCR_GPU_DRIVER_TOO_OLD] = "driver-too-old",
    };
    return status >= 0 && status < HYOCR_GPU_STATUS_COUNT ? names[status] : NULL;
}
