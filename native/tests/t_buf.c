/* t_buf: buffers are aligned, zeroed and writable, and a renewed buffer is on other physical
 * pages than the one it replaces (fb_buf_renew's whole point; checked through
 * /proc/self/pagemap, which shows page frame numbers to root only, so as non-root that part
 * is skipped and says so). */
#define _DEFAULT_SOURCE 1
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fb_buf.h"

#define T_NAME "t_buf"
#include "t_expect.h"

#define MIB ((size_t)1 << 20)

static int zeroed(const unsigned char *b, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (b[i])
            return 0;
    return 1;
}

/* Page frame numbers of the pages under [buf, buf + len); 0 when they cannot be read. */
static size_t frames(const void *buf, size_t len, uint64_t *pfn, size_t max)
{
    long page = sysconf(_SC_PAGESIZE);
    int fd = open("/proc/self/pagemap", O_RDONLY);
    if (fd < 0)
        return 0;
    size_t n = 0;
    for (uintptr_t a = (uintptr_t)buf; a < (uintptr_t)buf + len && n < max; a += (size_t)page) {
        uint64_t e = 0;
        if (pread(fd, &e, sizeof e, (off_t)(a / (uintptr_t)page * sizeof e)) != sizeof e)
            break;
        uint64_t f = e & ((UINT64_C(1) << 55) - 1);
        if (!(e >> 63) || f == 0) /* not present, or hidden from non-root */
            break;
        pfn[n++] = f;
    }
    close(fd);
    return n;
}

static void shapes(void)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t lens[] = {0, 1, 4095, 4096, 100000, 3 * MIB};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        for (int huge = 0; huge < 2; huge++) {
            size_t len = lens[i];
            unsigned char *b = fb_buf_alloc_pages(len, huge);
            EXPECT(b != NULL, "len %zu", len);
            if (!b)
                continue;
            size_t align = huge && len >= 2 * MIB ? 2 * MIB : (size_t)page;
            EXPECT((uintptr_t)b % align == 0, "len %zu huge %d at %p", len, huge, (void *)b);
            EXPECT(zeroed(b, len ? len : 1), "len %zu not zeroed", len);
            memset(b, 0xa5, len ? len : 1);
            fb_buf_free(b);
        }
    }
    fb_buf_free(NULL);
}

static void renewal(void)
{
    enum { PAGES = 256 };
    size_t len = PAGES * (size_t)sysconf(_SC_PAGESIZE);
    uint64_t before[PAGES], after[PAGES];
    unsigned char *b = fb_buf_alloc(len);
    memset(b, 0x5a, len);
    size_t nb = frames(b, len, before, PAGES);
    unsigned char *r = fb_buf_renew(b, len, 0, 1);
    EXPECT(r != NULL, "renew");
    EXPECT(zeroed(r, len), "renewed buffer not zeroed");
    size_t na = frames(r, len, after, PAGES);
    if (nb < PAGES || na < PAGES) {
        printf("t_buf: page frames not readable here (not root?): renewal placement unchecked\n");
    } else {
        size_t shared = 0;
        for (size_t i = 0; i < PAGES; i++)
            for (size_t j = 0; j < PAGES; j++)
                shared += before[i] == after[j];
        EXPECT(shared == 0, "%zu of %d pages reused by the renewed buffer", shared, PAGES);
    }
    fb_buf_free(r);
}

int main(void)
{
    shapes();
    renewal();
    return t_verdict();
}
