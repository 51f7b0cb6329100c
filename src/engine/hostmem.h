/* hyocr — host buffers of a page's size (a decoded image, its pixel values, the CPU backend's
 * weights and activations) in transparent huge pages where the kernel offers them.
 *
 * Such a buffer is written once right after it is taken, and with 4 KiB pages every first
 * write is a page fault: on the virtual machines this project runs on (its development machine,
 * the H200's host) a fault costs ~15 µs, so touching a fresh 50 MB buffer took 190–360 ms, and
 * 5–9 ms in 2 MiB pages (session 12). The buffers stay ordinary malloc/calloc memory (freed with
 * g_free/free, calloc's lazily zeroed pages still cost nothing until written); only their whole
 * 2 MiB extents are marked, before anything touches them, and only from 32 MiB on: glibc maps
 * those fresh each time (so they always fault), while smaller ones come from its heap, mostly
 * touched already — marked, a 12.6 MB image decoded 10–15 ms slower on the busy development
 * machine (the kernel compacts memory for a huge page it cannot find free). THP's "madvise" mode
 * (Debian's default) honours the mark, "always" does not need it, "never" ignores it. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#define HYOCR_HUGE_PAGE ((size_t)2 << 20)
#define HYOCR_HUGE_MIN  ((size_t)32 << 20)   /* glibc's largest mmap threshold */

/* From min bytes on: a buffer that is written once and never handed back to the heap for
 * reuse (the CPU backend's weights) gains from 2 MiB pages long before 32 MiB. */
static inline void hyocr_host_advise_huge_from(void *p, size_t bytes, size_t min)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (!p || bytes < min || bytes < 2 * HYOCR_HUGE_PAGE) return;
    uintptr_t a = ((uintptr_t)p + HYOCR_HUGE_PAGE - 1) & ~(uintptr_t)(HYOCR_HUGE_PAGE - 1);
    uintptr_t b = ((uintptr_t)p + bytes) & ~(uintptr_t)(HYOCR_HUGE_PAGE - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_HUGEPAGE);   /* a hint: failure changes nothing */
#else
    (void)p, (void)bytes, (void)min;
#endif
}

static inline void hyocr_host_advise_huge(void *p, size_t bytes)
{
    hyocr_host_advise_huge_from(p, bytes, HYOCR_HUGE_MIN);
}
