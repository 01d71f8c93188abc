#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1 /* madvise, MADV_HUGEPAGE */
#endif
#include "fb_buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE ((size_t)2 << 20)

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
    size_t alloc = len ? len : 1;
    void *buf = NULL;
    huge = huge && alloc >= HUGE_PAGE;
    int rc = posix_memalign(&buf, huge ? HUGE_PAGE : page, alloc);
    if (rc != 0) {
        fprintf(stderr, "fabench: cannot allocate %zu bytes: %s\n", alloc, strerror(rc));
        return NULL;
    }
    if (huge && madvise(buf, alloc, MADV_HUGEPAGE) != 0)
        fprintf(stderr, "fabench: huge pages not available (madvise: %s); plain pages used\n",
                strerror(errno));
    volatile unsigned char *p = buf;
    for (size_t off = 0; off < alloc; off += page)
        p[off] = 0;
    p[alloc - 1] = 0;
    return buf;
}

void fb_buf_free(void *buf)
{
    free(buf);
}
