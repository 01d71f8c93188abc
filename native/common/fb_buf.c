#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1 /* madvise, MADV_HUGEPAGE, MAP_ANONYMOUS */
#endif
#include "fb_buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE ((size_t)2 << 20)

/* Every buffer is its own mapping, not malloc's: malloc serves a large request from its heap
 * once a buffer of that size has been freed (its mmap threshold adapts), and hands the same
 * pages back, which would defeat fb_buf_renew. The mapping's start and length sit just below
 * the buffer, in a page of the mapping that no message touches. */
struct mapping {
    void *base;
    size_t len;
};

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

void *fb_buf_alloc(size_t len)
{
    return fb_buf_alloc_pages(len, false);
}

void *fb_buf_alloc_pages(size_t len, bool huge)
{
    size_t page = page_size();
    size_t want = len ? len : 1;
    huge = huge && want >= HUGE_PAGE;
    size_t align = huge ? HUGE_PAGE : page;
    /* the pages for `want`, and below them at least one page for the mapping record (with
     * huge pages, whatever it takes to reach the next 2 MiB boundary) */
    size_t maplen = align + (want + page - 1) / page * page;
    char *base = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        fprintf(stderr, "fabench: cannot allocate %zu bytes: %s\n", want, strerror(errno));
        return NULL;
    }
    uintptr_t first = (uintptr_t)base + page;
    char *buf = (char *)((first + align - 1) / align * align);
    if (huge && madvise(buf, want, MADV_HUGEPAGE) != 0)
        fprintf(stderr, "fabench: huge pages not available (madvise: %s); plain pages used\n",
                strerror(errno));
    struct mapping m = {base, maplen};
    memcpy(buf - sizeof m, &m, sizeof m);
    volatile unsigned char *p = (volatile unsigned char *)buf;
    for (size_t off = 0; off < want; off += page)
        p[off] = 0;
    p[want - 1] = 0;
    return buf;
}

void fb_buf_free(void *buf)
{
    if (!buf)
        return;
    struct mapping m;
    memcpy(&m, (char *)buf - sizeof m, sizeof m);
    munmap(m.base, m.len);
}

void *fb_buf_renew(void *old, size_t len, bool huge, unsigned seed)
{
    /* The kernel hands out freed pages last-in first-out, so a buffer allocated after another
     * of its size was freed gets that one's pages back: renewing two buffers in turn only
     * swapped their pages, and every third draw repeated the first (seen in /proc/self/pagemap).
     * A spacer of a pseudo-random number of pages, faulted in first and freed after, moves
     * where in the free list the new buffer starts. */
    size_t page = page_size();
    size_t npages = (len + page - 1) / page;
    size_t spacer_pages = npages ? (size_t)((seed * 2654435761u) >> 7) % (npages + 1) : 0;
    void *spacer = spacer_pages ? fb_buf_alloc(spacer_pages * page) : NULL;
    void *buf = fb_buf_alloc_pages(len, huge);
    fb_buf_free(spacer);
    if (buf)
        fb_buf_free(old);
    return buf;
}

int fb_buf_renew_pair(char **sbuf, size_t slen, char **rbuf, size_t rlen, bool huge,
                      long round)
{
    char *s = fb_buf_renew(*sbuf, slen, huge, 2 * (unsigned)round);
    if (!s)
        return -1;
    *sbuf = s;
    char *r = fb_buf_renew(*rbuf, rlen, huge, 2 * (unsigned)round + 1);
    if (!r)
        return -1;
    *rbuf = r;
    return 0;
}

size_t fb_llc_bytes(void)
{
    size_t best = 0;
    for (int i = 0; i < 16; i++) {
        char path[96];
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        unsigned long v = 0;
        char unit = 0;
        if (fscanf(f, "%lu%c", &v, &unit) >= 1) {
            size_t b = (size_t)v * (unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1);
            if (b > best)
                best = b;
        }
        fclose(f);
    }
    return best;
}

size_t fb_cold_region(size_t max_size)
{
    size_t llc = fb_llc_bytes();
    if (!llc)
        return 0;
    size_t step = fb_cold_step(max_size);
    size_t r = 2 * llc;
    return r < 2 * step ? 2 * step : r;
}

size_t fb_cold_step(size_t size)
{
    return size ? (size + 63) & ~(size_t)63 : 64;
}

size_t fb_cold_slots(size_t region, size_t size)
{
    return region / fb_cold_step(size);
}

size_t fb_cold_offset(size_t region, size_t size, long n)
{
    size_t slots = fb_cold_slots(region, size);
    return slots ? ((size_t)n % slots) * fb_cold_step(size) : 0;
}

struct fb_ring fb_cold_ring(size_t region, size_t size, long first)
{
    return (struct fb_ring){.step = fb_cold_step(size), .n = fb_cold_slots(region, size),
                            .first = first};
}
