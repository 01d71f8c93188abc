/* fb_buf.h - message buffers: page aligned and faulted in before any timing starts. */
#ifndef FB_BUF_H
#define FB_BUF_H

#include <stddef.h>

/* Page-aligned buffer of at least `len` bytes (len 0 gives one page), every page written
 * once so no page fault lands inside a timed region. NULL (and a message on stderr) if the
 * allocation fails. Free with fb_buf_free. */
void *fb_buf_alloc(size_t len);
void fb_buf_free(void *buf);

#endif
