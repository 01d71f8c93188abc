/* t_reorder_metrics: RFC 4737 / RFC 5236 figures of hand-made arrival orders, worked out by hand. */
#include <stdint.h>
#include <stdio.h>

#include "fb_reorder.h"

#define T_NAME "t_reorder_metrics"
#include "t_expect.h"

/* Sent 0..9. Arrived: 0 1 3 2 4 4 7 5 6 9 12 (8 lost, 4 twice, 12 never sent).
 * RFC 4737: next expected 0,1,2 -> 3 arrives (next 4), 2 < 4 reordered; 4 (next 5), the
 * second 4 is a duplicate; 7 (next 8); 5 and 6 < 8 reordered; 9 in order. 3 of 9 received.
 * Extents over the first arrivals [0 1 3 2 4 7 5 6 9] (positions 0..8): 2 at 3, earliest
 * higher is 3 at 2 -> 1; 5 at 6, earliest higher 7 at 5 -> 1; 6 at 7, earliest higher 7 at
 * 5 -> 2. So extent 1 twice, 2 once.
 * RFC 5236 displacement (higher before - lower after): 0:0 1:0 3:(0-1)=-1 2:(1-0)=+1 4:0
 * 7:(0-2)=-2 5:+1 6:+1 9:0 (8 was lost: counted nowhere). RD: -2:1 -1:1 0:4 +1:3. */
static void mixed(void)
{
    const uint32_t arr[] = {0, 1, 3, 2, 4, 4, 7, 5, 6, 9, 12};
    struct fb_reorder r;
    EXPECT(fb_reorder_analyse(arr, sizeof(arr) / sizeof(arr[0]), 10, 3, &r) == 0, "analyse");
    EXPECT(r.arrivals == 11 && r.received == 9 && r.duplicates == 1 && r.lost == 1 &&
               r.out_of_range == 1,
           "counts %ld %ld %ld %ld %ld", r.arrivals, r.received, r.duplicates, r.lost,
           r.out_of_range);
    EXPECT(r.reordered == 3 && r.reordered_ratio == 3.0 / 9.0, "reordered %ld ratio %g",
           r.reordered, r.reordered_ratio);
    EXPECT(r.max_extent == 2 && r.extent_count[1] == 2 && r.extent_count[2] == 1,
           "extents max %ld", r.max_extent);
    /* offsets (next expected - 1 - number): 2 at next 4 -> 1; 5 at next 8 -> 2; 6 -> 1 */
    EXPECT(r.max_offset == 2 && r.offset_count[1] == 2 && r.offset_count[2] == 1,
           "offsets max %ld", r.max_offset);
    const long rd[7] = {0, 1, 1, 4, 3, 0, 0}; /* D = -3..3 */
    for (int k = 0; k < 7; k++)
        EXPECT(r.rd_count[k] == rd[k], "RD[%d] = %ld, want %ld", k - 3, r.rd_count[k], rd[k]);
    EXPECT(r.rd_beyond == 0, "beyond %ld", r.rd_beyond);
    fb_reorder_free(&r);

    /* a threshold of 1 leaves 7's displacement of -2 beyond it */
    EXPECT(fb_reorder_analyse(arr, sizeof(arr) / sizeof(arr[0]), 10, 1, &r) == 0, "analyse");
    EXPECT(r.rd_beyond == 1 && r.rd_count[0] == 1 && r.rd_count[1] == 4 && r.rd_count[2] == 3,
           "dt 1: beyond %ld", r.rd_beyond);
    fb_reorder_free(&r);
}

/* No loss, no duplicate: D is the arrival position minus the number (RFC 5236's receive
 * index minus sequence number). Arrived 2 0 1 3: D = -2 +1 +1 0. RFC 4737: 0 and 1 are
 * reordered (both below 3), extents 1 (0 at 1, 2 at 0) and 2 (1 at 2, 2 at 0). */
static void permutation(void)
{
    const uint32_t arr[] = {2, 0, 1, 3};
    struct fb_reorder r;
    EXPECT(fb_reorder_analyse(arr, 4, 4, 2, &r) == 0, "analyse");
    EXPECT(r.reordered == 2 && r.reordered_ratio == 0.5 && r.lost == 0, "reordered %ld",
           r.reordered);
    EXPECT(r.max_extent == 2 && r.extent_count[1] == 1 && r.extent_count[2] == 1, "extents");
    const long rd[5] = {1, 0, 1, 2, 0}; /* D = -2..2 */
    for (int k = 0; k < 5; k++)
        EXPECT(r.rd_count[k] == rd[k], "RD[%d] = %ld, want %ld", k - 2, r.rd_count[k], rd[k]);
    fb_reorder_free(&r);
}

/* Two paths, the second slower (multipath): 0 2 4 then 1 3. 1 arrives 2 arrivals after the
 * earliest higher one (2 at 1): extent 2, but 3 numbers below the highest (4): offset 3. 3:
 * extent 2 (4 at 2), offset 1. A window of 2 numbers would slide past 1 when 4 comes. */
static void two_paths(void)
{
    const uint32_t arr[] = {0, 2, 4, 1, 3};
    struct fb_reorder r;
    EXPECT(fb_reorder_analyse(arr, 5, 5, 4, &r) == 0, "analyse");
    EXPECT(r.reordered == 2 && r.max_extent == 2 && r.extent_count[2] == 2, "extents %ld",
           r.max_extent);
    EXPECT(r.max_offset == 3 && r.offset_count[3] == 1 && r.offset_count[1] == 1 &&
               r.offset_count[2] == 0,
           "offsets max %ld", r.max_offset);
    fb_reorder_free(&r);
}

/* In order with a loss: nothing reordered, every displacement 0. */
static void in_order(void)
{
    const uint32_t arr[] = {0, 1, 2, 4, 5};
    struct fb_reorder r;
    EXPECT(fb_reorder_analyse(arr, 5, 6, 4, &r) == 0, "analyse");
    EXPECT(r.reordered == 0 && r.reordered_ratio == 0 && r.max_extent == 0 && r.lost == 1 &&
               r.max_offset == 0,
           "in order: reordered %ld lost %ld", r.reordered, r.lost);
    EXPECT(r.rd_count[4] == 5 && r.rd_beyond == 0, "RD[0] = %ld", r.rd_count[4]);
    fb_reorder_free(&r);
}

int main(void)
{
    mixed();
    permutation();
    two_paths();
    in_order();
    return t_verdict();
}
