/* hyocr — first-run check: can this machine (or this Flatpak sandbox) run CUDA?
 *
 * It looks, without touching the GPU, at the pieces CUDA needs and that users most often
 * lack: the NVIDIA kernel driver (/proc/driver/nvidia/version), the device nodes
 * (/dev/nvidiactl, /dev/nvidia0…, /dev/nvidia-uvm, which needs the nvidia_uvm module),
 * the user-space driver (libcuda.so.1; inside Flatpak it comes from the
 * org.freedesktop.Platform.GL.nvidia-<version> extension, mounted under
 * /usr/lib/<triplet>/GL/nvidia-<version>/) and whether user space and kernel module are
 * the same driver version. The answer is a diagnosis plus a translated title and
 * explanation for the UI or the CLI; the CPU backend works whatever it says.
 *
 *     g_autoptr(hyocr_gpu_report) r = hyocr_gpu_check(NULL);
 *     if (r->status != HYOCR_GPU_OK) show(r->title, r->detail);
 *
 * Everything is read relative to a root folder, so tests run it on a fake tree; the
 * libcuda probe is a callback for the same reason (the default one dlopens libcuda.so.1). */
#pragma once
#include <glib.h>
#include <stdbool.h>

G_BEGIN_DECLS

/* First problem found, in the order a user has to fix them. */
typedef enum {
    HYOCR_GPU_OK,                /* everything CUDA needs is there */
    HYOCR_GPU_NO_DRIVER,         /* no NVIDIA kernel driver loaded (or no NVIDIA GPU) */
    HYOCR_GPU_NO_DEVICE,         /* driver loaded but /dev/nvidiactl or /dev/nvidiaN absent */
    HYOCR_GPU_NO_UVM,            /* /dev/nvidia-uvm absent: nvidia_uvm not loaded or node not created */
    HYOCR_GPU_NO_GL_EXTENSION,   /* Flatpak: no GL.nvidia extension for the host driver */
    HYOCR_GPU_NO_LIBCUDA,        /* libcuda.so.1 cannot be loaded */
    HYOCR_GPU_VERSION_MISMATCH,  /* user-space driver ≠ kernel module (update, or reboot) */
    HYOCR_GPU_DRIVER_TOO_OLD,    /* older than the CUDA runtime the app was built with needs */
    HYOCR_GPU_STATUS_COUNT
} hyocr_gpu_status;

typedef struct {
    hyocr_gpu_status status;
    bool  in_flatpak;            /* /.flatpak-info exists */
    bool  have_driver;           /* kernel module version readable */
    bool  have_ctl;              /* /dev/nvidiactl */
    int   n_gpus;                /* /dev/nvidia0, /dev/nvidia1, … */
    bool  have_uvm;              /* /dev/nvidia-uvm */
    bool  uvm_module_loaded;     /* /sys/module/nvidia_uvm */
    bool  have_libcuda;          /* the probe loaded libcuda.so.1 */
    char *kernel_version;        /* "575.57.08", or NULL */
    char *userspace_version;     /* libcuda's (or the GL extension's) version, or NULL */
    char *gl_extensions;         /* Flatpak: nvidia-* GL extension versions found, comma-separated, or NULL */
    char *title;                 /* one line for a status page (translated) */
    char *detail;                /* what is wrong and what to do (translated) */
} hyocr_gpu_report;

/* Loads libcuda.so.1 (or pretends to) and returns the real path of the loaded file in
 * *path (g_free'd by the caller), e.g. ".../libcuda.so.575.57.08"; FALSE when it cannot
 * be loaded, with the loader's message in *path (or NULL). */
typedef gboolean (*hyocr_gpu_libcuda_probe)(char **path, void *user_data);

typedef struct {
    const char *root;                   /* NULL or "/" = this system */
    const char *min_driver;             /* e.g. "580"; NULL = no check (see below) */
    hyocr_gpu_libcuda_probe probe;      /* NULL = dlopen("libcuda.so.1") */
    void *probe_data;
} hyocr_gpu_check_options;

/* Never fails; options may be NULL. */
hyocr_gpu_report *hyocr_gpu_check(const hyocr_gpu_check_options *options);
void              hyocr_gpu_report_free(hyocr_gpu_report *report);
/* The oldest driver a CUDA runtime runs on (CUDART_VERSION, e.g. 13040 → "580"), for
 * hyocr_gpu_check_options.min_driver; NULL when unknown. */
const char       *hyocr_gpu_min_driver_for_cuda(int cudart_version);
/* "ok", "no-driver", … for logs and the CLI's machine-readable output. */
const char       *hyocr_gpu_status_name(hyocr_gpu_status status);
/* The default probe, exposed for callers that want to try it on its own. */
gboolean          hyocr_gpu_probe_libcuda(char **path, void *user_data);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_gpu_report, hyocr_gpu_report_free)

G_END_DECLS
