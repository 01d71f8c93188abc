#include "fb_buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

void *fb_buf_alloc(size_t len)
{
    size_t page = page_size();
    size_t alloc = len ? len : 1;
    void *buf = NULL;
    int rc = posix_memalign(&buf, page, alloc);
    if (rc != 0) {
        fprintf(stderr, "fabench: cannot allocate %zu bytes: %s\n", alloc, strerror(rc));
        return NULL;
    }
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
