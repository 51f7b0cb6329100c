/* First-run GPU check on fake root folders: each test builds the files a real system
 * (or a Flatpak sandbox) would have and checks the diagnosis. */
#include "gpu-check.h"
#include "testutil.h"

#include <glib/gstdio.h>
#include <string.h>

#define BANNER_PROPRIETARY \
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  575.57.08  Sat May 24 07:21:44 UTC 2025\n" \
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
#define BANNER_OPEN \
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.16  Release Build  " \
    "(dvs-builder@U16-I3-B03-4-3)  Thu Jan 23 00:43:17 UTC 2025\n" \
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"

typedef struct {
    char *root;
} Fixture;

static void put(Fixture *f, const char *rel, const char *contents)
{
    g_autofree char *path = g_build_filename(f->root, rel, NULL);
    g_autofree char *dir = g_path_get_dirname(path);
    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    g_autoptr(GError) error = NULL;
    g_assert_true(g_file_set_contents(path, contents ? contents : "", -1, &error));
    g_assert_no_error(error);
}

static void mkdir_in(Fixture *f, const char *rel)
{
    g_autofree char *path = g_build_filename(f->root, rel, NULL);
    g_assert_cmpint(g_mkdir_with_parents(path, 0755), ==, 0);
}

/* A host with the driver loaded and every device node CUDA needs. */
static void host_with_nodes(Fixture *f, const char *banner)
{
    put(f, "proc/driver/nvidia/version", banner);
    put(f, "dev/nvidiactl", NULL);
    put(f, "dev/nvidia0", NULL);
    put(f, "dev/nvidia-uvm", NULL);
    put(f, "dev/nvidia-uvm-tools", NULL);
    put(f, "dev/nvidia-modeset", NULL);
    mkdir_in(f, "dev/nvidia-caps");
    mkdir_in(f, "sys/module/nvidia_uvm");
}

static void fixture_set_up(Fixture *f, gconstpointer data)
{
    f->root = hyocr_test_tmpdir();
}

static void fixture_tear_down(Fixture *f, gconstpointer data)
{
    hyocr_test_rmdir(f->root);
    g_free(f->root);
}

/* Fake probes: the path libcuda.so.1 resolves to, or a failure. */
static gboolean probe_path(char **path, void *data)
{
    *path = g_strdup(data);
    return TRUE;
}

static gboolean probe_fail(char **path, void *data)
{
    *path = g_strdup("libcuda.so.1: cannot open shared object file: No such file or directory");
    return FALSE;
}

static hyocr_gpu_report *check(Fixture *f, hyocr_gpu_libcuda_probe probe, const char *libcuda)
{
    hyocr_gpu_check_options o = { .root = f->root, .probe = probe, .probe_data = (void *)libcuda };
    hyocr_gpu_report *r = hyocr_gpu_check(&o);
    g_assert_nonnull(r);
    g_assert_nonnull(r->title);
    g_assert_nonnull(r->detail);
    g_assert_cmpuint(strlen(r->title), >, 0);
    g_assert_cmpuint(strlen(r->detail), >, strlen(r->title));
    return r;
}

static void test_no_driver(Fixture *f, gconstpointer data)
{
    g_autoptr(hyocr_gpu_report) r = check(f, probe_fail, NULL);
    g_assert_cmpint(r->status, ==, HYOCR_GPU_NO_DRIVER);
    g_assert_false(r->have_driver);
    g_assert_false(r->in_flatpak);
    g_assert_null(r->kernel_version);
    g_assert_nonnull(strstr(r->detail, "CPU"));
}

/* Unreadable or foreign contents in the version file read as "no driver", never a crash. */
static void test_garbage_version_file(Fixture *f, gconstpointer data)
{
    put(f, "proc/driver/nvidia/version", "NVRM version: \xff\xfe garbage 12. .5 v575 575.\n");
    put(f, "dev/nvidiactl", NULL);
    g_autoptr(hyocr_gpu_report) r = check(f, probe_fail, NULL);
    g_assert_cmpint(r->status, ==, HYOCR_GPU_NO_DRIVER);
    g_assert_null(r->kernel_version);
}

static void test_sysfs_version_fallback(Fixture *f, gconstpointer data)
{
    put(f, "sys/module/nvidia/version", "550.163.01\n");
    g_autoptr(hyocr_gpu_report) r = check(f, probe_fail, NULL);
    g_assert_cmpstr(r->kernel_version, ==, "550.163.01");
    g_assert_cmpint(r->status, ==, HYOCR_GPU_NO_DEVICE);
    g_assert_nonnull(strstr(r->detail, "550.163.01"));
    g_assert_nonnull(strstr(r->detail, "nvidia-modprobe"));
}

static void test_no_device_in_flatpak(Fixture *f, gconstpointer data)
{
    put(f, ".flatpak-info", "[Application]\nname=io.github.hyocr.Hyocr\n");
    put(f, "proc/driver/nvidia/version", BANNER_PROPRIETARY);
    g_autoptr(hyocr_gpu_report) r = check(f, probe_fail, NULL);
    g_assert_true(r->in_flatpak);
    g_assert_cmpint(r->status, ==, HYOCR_GPU_NO_DEVICE);
    g_assert_nonnull(strstr(r->detail, "flatpak override --user --device=dri io.github.hyocr.Hyocr"));
}

static void test_no_uvm_module(Fixture *f, gconstpointer data)
{
    host_with_nodes(f, BANNER_OPEN);
    g_autofree char *uvm = g_build_filename(f->root, "dev", "nvidia-uvm", NULL);
    g_autofree char *mod = g_build_filename(f->root, "sys", "module", "nvidia_uvm", NULL);
    g_assert_cmpint(g_remove(uvm), ==, 0);
    g_assert_cmpint(g_rmdir(mod), ==, 0);
    g_autoptr(hyocr_gpu_report) r = check(f, probe_path, "/usr/lib/x86_64-linux-gnu/libcuda.so.570.86.16");
    g_assert_cmpstr(r->kernel_version, ==, "570.86.16");
    g_assert_cmpint(r->status, ==, HYOCR_GPU_NO_UVM);
    g_assert_false(r->uvm_module_loaded);
    g_assert_nonnull(strstr(r->detail, "modprobe nvidia-uvm"));
}

static void test_uvm_loaded_node_missing(Fixture *f, gconstpointer data)
{
    host_with_nodes(f, BANNER_OPEN);
    g_autofree char *uvm = g_build_filename(f->root, "dev", "nvidia-uvm", NULL);
    g_assert_cmpint(g_remove(uvm), ==, 0);
    g_autoptr(hyocr_gpu_report) r = check(f, probe_path, "/usr/lib/x86_64-linux-gnu/libcuda.so.570.86.16");
    g_assert_cmpint(r->status, ==, HYOCR_GPU_NO_UVM);
    g_assert_true(r->uvm_module_loaded);
    g_assert_null(strstr(r->detail, "modprobe nvidia-uvm"));
    g_assert_nonnull(strstr(r->detail, "nvidia-modprobe -u -c=0"));
}

/* nvidiactl, nvidia-uvm, nvidia-modeset and nvidia-caps are not GPUs. */
static void test_ok_counts_gpus(Fixture *f, gconstpointer data)
{
    host_with_nodes(f, BANNER_PROPRIETARY);
    put(f, "dev/nvidia1", NULL);
    put(f, "dev/nvidia12", NULL);
    g_autoptr(hyocr_gpu_report) r = check(f, probe_path, "/usr/lib/x86_64-linux-gnu/libcuda.so.575.57.08");
    g_assert_cmpint(r->status, ==, HYOCR_GPU_OK);
    g_assert_cmpint(r->n_gpus, ==, 3);
    g_assert_true(r->have_libcuda);
    g_assert_cmpstr(r->userspace_version, ==, "575.57.08");
    g_assert_nonnull(strstr(r->detail, "575.57.08"));
}

/* Driver updated, machine not restarted: libraries and module disagree. */
static void test_host_mismatch(Fixture *f, gconstpointer data)
{
    host_with_nodes(f, BANNER_PROPRIETARY);
    g_autoptr(hyocr_gpu_report) r = check(f, probe_path, "/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06");
    g_assert_cmpint(r->status, ==, HYOCR_GPU_VERSION_MISMATCH);
    g_assert_nonnull(strstr(r->detail, "575.57.08"));
    g_assert_nonnull(strstr(r->detail, "580.65.06"));
}

/* A libcuda whose file name carries no version cannot be compared: trust it. */
static void test_unversioned_libcuda(Fixture *f, gconstpointer data)
{
    host_with_nodes(f, BANNER_PROPRIETARY);
    g_autoptr(hyocr_gpu_report) r = check(f, probe_path, "/opt/nvidia/libcuda.so.1");
    g_assert_cmpint(r->status, ==, HYOCR_GPU_OK);
    g_assert_null(r->userspace_version);
}

static void test_no_libcuda(Fixture *f, gconstpointer data)
{
    host_with_nodes(f, BANNER_PROPRIETARY);
    g_autoptr(hyocr_gpu_report) r = check(f, probe_fail, NULL);
    g_assert_cmpint(r->status, ==, HYOCR_GPU_NO_LIBCUDA);
    g_assert_false(r->have_libcuda);
    g_assert_nonnull(strstr(r->detail, "libcuda.so.1"));
}

static void flatpak_sandbox(Fixture *f)
{
    host_with_nodes(f, BANNER_PROPRIETARY);
    put(f, ".flatpak-info", "[Application]\nname=io.github.hyocr.Hyocr\n");
    mkdir_in(f, "usr/lib/x86_64-linux-gnu/GL/default/lib");
}

static void test_flatpak_no_extension(Fixture *f, gconstpointer data)
{
    flatpak_sandbox(f);
    g_autoptr(hyocr_gpu_report) r = check(f, probe_fail, NULL);
    g_assert_cmpint(r->status, ==, HYOCR_GPU_NO_GL_EXTENSION);
    g_assert_null(r->gl_extensions);
    g_assert_nonnull(strstr(r->detail, "org.freedesktop.Platform.GL.nvidia-575-57-08"));
}

static void test_flatpak_ok(Fixture *f, gconstpointer data)
{
    flatpak_sandbox(f);
    put(f, "usr/lib/x86_64-linux-gnu/GL/nvidia-575-57-08/lib/libcuda.so.575.57.08", NULL);
    g_autoptr(hyocr_gpu_report) r =
        check(f, probe_path, "/usr/lib/x86_64-linux-gnu/GL/nvidia-575-57-08/lib/libcuda.so.575.57.08");
    g_assert_cmpint(r->status, ==, HYOCR_GPU_OK);
    g_assert_cmpstr(r->gl_extensions, ==, "575.57.08");
}

/* Only an older extension mounted (FLATPAK_GL_DRIVERS, or a stale install): its version
 * stands in for the user-space driver even though libcuda did not load. */
static void test_flatpak_extension_mismatch(Fixture *f, gconstpointer data)
{
    flatpak_sandbox(f);
    mkdir_in(f, "usr/lib/x86_64-linux-gnu/GL/nvidia-570-86-16/lib");
    g_autoptr(hyocr_gpu_report) r = check(f, probe_fail, NULL);
    g_assert_cmpint(r->status, ==, HYOCR_GPU_VERSION_MISMATCH);
    g_assert_cmpstr(r->userspace_version, ==, "570.86.16");
    g_assert_nonnull(strstr(r->detail, "flatpak update"));
}

static void test_flatpak_extension_no_libcuda(Fixture *f, gconstpointer data)
{
    flatpak_sandbox(f);
    mkdir_in(f, "usr/lib/x86_64-linux-gnu/GL/nvidia-575-57-08/lib");
    mkdir_in(f, "usr/lib/x86_64-linux-gnu/GL/nvidia-bogus");
    g_autoptr(hyocr_gpu_report) r = check(f, probe_fail, NULL);
    g_assert_cmpstr(r->gl_extensions, ==, "575.57.08");
    g_assert_cmpint(r->status, ==, HYOCR_GPU_NO_LIBCUDA);
}

static hyocr_gpu_status status_with_minimum(Fixture *f, const char *min)
{
    hyocr_gpu_check_options o = { .root = f->root, .probe = probe_path, .min_driver = min,
                                  .probe_data = (void *)"/usr/lib/x86_64-linux-gnu/libcuda.so.575.57.08" };
    g_autoptr(hyocr_gpu_report) r = hyocr_gpu_check(&o);
    if (r->status == HYOCR_GPU_DRIVER_TOO_OLD) {
        g_assert_nonnull(strstr(r->detail, min));
        g_assert_nonnull(strstr(r->detail, "575.57.08"));
    }
    return r->status;
}

/* CUDA 13 needs driver 580: a 575 driver is complete but too old for it. */
static void test_driver_too_old(Fixture *f, gconstpointer data)
{
    host_with_nodes(f, BANNER_PROPRIETARY);
    g_assert_cmpint(status_with_minimum(f, "580"), ==, HYOCR_GPU_DRIVER_TOO_OLD);
    g_assert_cmpint(status_with_minimum(f, "575.57.09"), ==, HYOCR_GPU_DRIVER_TOO_OLD);
    g_assert_cmpint(status_with_minimum(f, "575.60"), ==, HYOCR_GPU_DRIVER_TOO_OLD);
    g_assert_cmpint(status_with_minimum(f, "575"), ==, HYOCR_GPU_OK);
    g_assert_cmpint(status_with_minimum(f, "575.57.08"), ==, HYOCR_GPU_OK);
    g_assert_cmpint(status_with_minimum(f, "525.60.13"), ==, HYOCR_GPU_OK);
    g_assert_cmpint(status_with_minimum(f, "not-a-version"), ==, HYOCR_GPU_OK);
    g_assert_cmpint(status_with_minimum(f, NULL), ==, HYOCR_GPU_OK);
}

static void test_min_driver_for_cuda(void)
{
    g_assert_cmpstr(hyocr_gpu_min_driver_for_cuda(13040), ==, "580");
    g_assert_cmpstr(hyocr_gpu_min_driver_for_cuda(13000), ==, "580");
    g_assert_cmpstr(hyocr_gpu_min_driver_for_cuda(12090), ==, "525.60.13");
    g_assert_null(hyocr_gpu_min_driver_for_cuda(11080));
    g_assert_null(hyocr_gpu_min_driver_for_cuda(0));
}

/* Two extensions mounted (FLATPAK_GL_DRIVERS): the one matching the module counts. */
static void test_flatpak_two_extensions(Fixture *f, gconstpointer data)
{
    flatpak_sandbox(f);
    mkdir_in(f, "usr/lib/x86_64-linux-gnu/GL/nvidia-570-86-16/lib");
    mkdir_in(f, "usr/lib/x86_64-linux-gnu/GL/nvidia-575-57-08/lib");
    g_autoptr(hyocr_gpu_report) r = check(f, probe_fail, NULL);
    g_assert_cmpstr(r->gl_extensions, ==, "570.86.16, 575.57.08");
    g_assert_cmpstr(r->userspace_version, ==, "575.57.08");
    g_assert_cmpint(r->status, ==, HYOCR_GPU_NO_LIBCUDA);
}

static void test_status_names(void)
{
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (int s = 0; s < HYOCR_GPU_STATUS_COUNT; s++) {
        const char *name = hyocr_gpu_status_name((hyocr_gpu_status)s);
        g_assert_nonnull(name);
        g_assert_false(g_hash_table_contains(seen, name));
        g_hash_table_add(seen, (gpointer)name);
    }
    g_assert_null(hyocr_gpu_status_name(HYOCR_GPU_STATUS_COUNT));
    g_assert_null(hyocr_gpu_status_name((hyocr_gpu_status)-1));
}

/* The real system with the real dlopen probe: whatever this machine has, the answer is
 * consistent with what is on disk. */
static void test_this_system(void)
{
    g_autoptr(hyocr_gpu_report) r = hyocr_gpu_check(NULL);
    g_assert_cmpint(r->status, >=, 0);
    g_assert_cmpint(r->status, <, HYOCR_GPU_STATUS_COUNT);
    g_assert_cmpint(r->have_ctl, ==, g_file_test("/dev/nvidiactl", G_FILE_TEST_EXISTS));
    g_assert_cmpint(r->in_flatpak, ==, g_file_test("/.flatpak-info", G_FILE_TEST_EXISTS));
    char *why = NULL;
    gboolean loaded = hyocr_gpu_probe_libcuda(&why, NULL);
    g_assert_cmpint(loaded, ==, r->have_libcuda);
    if (loaded && why) g_assert_true(g_path_is_absolute(why));
    g_test_message("this system: %s (%s)", hyocr_gpu_status_name(r->status), r->title);
    g_free(why);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
#define ADD(name, fn) g_test_add("/gpu-check/" name, Fixture, NULL, fixture_set_up, fn, fixture_tear_down)
    ADD("no-driver", test_no_driver);
    ADD("garbage-version-file", test_garbage_version_file);
    ADD("sysfs-version-fallback", test_sysfs_version_fallback);
    ADD("no-device-in-flatpak", test_no_device_in_flatpak);
    ADD("no-uvm-module", test_no_uvm_module);
    ADD("uvm-loaded-node-missing", test_uvm_loaded_node_missing);
    ADD("ok-counts-gpus", test_ok_counts_gpus);
    ADD("host-mismatch", test_host_mismatch);
    ADD("unversioned-libcuda", test_unversioned_libcuda);
    ADD("no-libcuda", test_no_libcuda);
    ADD("flatpak-no-extension", test_flatpak_no_extension);
    ADD("flatpak-ok", test_flatpak_ok);
    ADD("flatpak-extension-mismatch", test_flatpak_extension_mismatch);
    ADD("flatpak-extension-no-libcuda", test_flatpak_extension_no_libcuda);
    ADD("driver-too-old", test_driver_too_old);
    ADD("flatpak-two-extensions", test_flatpak_two_extensions);
#undef ADD
    g_test_add_func("/gpu-check/status-names", test_status_names);
    g_test_add_func("/gpu-check/min-driver-for-cuda", test_min_driver_for_cuda);
    g_test_add_func("/gpu-check/this-system", test_this_system);
    return g_test_run();
}
