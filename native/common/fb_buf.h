/* fb_buf.h - message buffers: page aligned and faulted in before any timing starts. */
#ifndef FB_BUF_H
#define FB_BUF_H

#include <stdbool.h>
#include <stddef.h>

#include "fb_loop.h"

/* Page-aligned buffer of at least `len` bytes (len 0 gives one page), every page written
 * once so no page fault lands inside a timed region. NULL (and a message on stderr) if the
 * allocation fails. Free with fb_buf_free. */
void *fb_buf_alloc(size_t len);

/* As fb_buf_alloc; with `huge`, buffers of 2 MiB and more are 2 MiB aligned and advised to
 * the kernel as transparent huge pages (MADV_HUGEPAGE), before they are faulted in. Measured
 * here: 4 MiB shared-memory bandwidth +60 % and its launch-to-launch spread from 3 % to 1 %
 * (which 4 KiB pages land where changes per launch). Off by default: OSU's buffers are plain
 * pages, and comparisons with it should be like for like. */
void *fb_buf_alloc_pages(size_t len, bool huge);
void fb_buf_free(void *buf);

/* A fresh buffer in place of `old` (freed): allocated and faulted in before `old` is freed,
 * so its pages are other physical pages than `old`'s. Which physical pages back a large
 * buffer sets its cache-set conflicts: with buffers re-drawn this way each round, 4 MiB
 * shared-memory bandwidth moved between 6800 and 9200 MB/s within one launch, while one draw
 * kept for a whole launch stayed within 3 %. A run that renews its buffers each round samples
 * this effect instead of being stuck with one draw. `seed` (e.g. the round) varies the draw.
 * Transiently needs up to three times `len`. NULL if the allocation fails (`old` is then
 * still allocated). */
void *fb_buf_renew(void *old, size_t len, bool huge, unsigned seed);

/* A kernel's send and receive buffers renewed for round `round` (each with its own seed). 0 on
 * success; -1 if an allocation failed, with *sbuf and *rbuf still valid buffers. */
int fb_buf_renew_pair(char **sbuf, size_t slen, char **rbuf, size_t rlen, bool huge,
                      long round);

/* The last-level cache of CPU 0 in bytes (the largest `size` under
 * /sys/devices/system/cpu/cpu0/cache/index*), 0 if it cannot be read. */
size_t fb_llc_bytes(void);

/* --cache-cold: the region a buffer cycles through, twice the last-level cache and at least
 * two messages of `max_size` (0 if the cache size is unknown). Messages of `size` bytes take
 * cache-line-aligned slots of fb_cold_step(size) bytes, fb_cold_slots(region, size) of them
 * in the region; fb_cold_offset is the offset of the `n`th message (an iteration's message for
 * the ping-pong, each message of each window for the window kernels): consecutive messages
 * take consecutive slots, and a slot comes round again only after the rest of the region,
 * at least one last-level cache of other bytes, has passed through, so no message finds in
 * cache what an earlier one left. The region does not grow with the window: a window of more
 * messages than slots reuses slots within the window, each still cold (IMB -off_cache: the
 * same 2x region, slots ws % n per window). */
size_t fb_cold_region(size_t max_size);
size_t fb_cold_step(size_t size);
size_t fb_cold_slots(size_t region, size_t size);
size_t fb_cold_offset(size_t region, size_t size, long n);
/* The engine's placement of a window whose first message is the `first`th of the cycle: its
 * message k at fb_cold_offset(region, size, first + k). */
struct fb_ring fb_cold_ring(size_t region, size_t size, long first);

#endif
