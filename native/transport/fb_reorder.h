/* fb_reorder.h - packet reordering figures of one arrival sequence (udp.reorder).
 *
 * The sender numbers datagrams 0..sent-1; the receiver logs the numbers in the order they
 * arrived. From that log:
 *   RFC 4737 (section 3, 4): a packet is reordered when it arrives with a number below the
 *     next expected one (one above the highest so far; the first expected is 0); the
 *     reordered ratio is reordered / received; the extent of a reordered packet is how many
 *     arrivals back the earliest arrival with a higher number was (its position minus that
 *     one's), collected as a distribution.
 *   RFC 5236 (reorder density): each received packet's displacement D = (higher-numbered
 *     packets that arrived before it) - (lower-numbered packets that arrived after it); late
 *     packets have D > 0, early ones D < 0. With no loss or duplicate this is its arrival
 *     position minus its number, RFC 5236's receive index minus sequence number; lost packets
 *     count on neither side, so a loss displaces nobody. RD[k] = share of received packets
 *     with D = k for |k| <= dt (the displacement threshold); |D| > dt is counted apart.
 *   The offset of a reordered packet (not an RFC figure): how many numbers below the highest
 *     one received so far it arrived (next expected - 1 - its number). A resequencer that
 *     holds packets by number (document 001's Algorithm 1, window W) keeps a hole open only
 *     while every later arrival is within W numbers of it, so it repairs exactly the packets
 *     with offset <= W; the extent counts arrivals, not numbers, and is at most the offset
 *     when nothing is lost.
 * Only the first copy of a number counts; later copies are duplicates, numbers >= sent are
 * ignored (counted in out_of_range).
 */
#ifndef FB_REORDER_H
#define FB_REORDER_H

#include <stddef.h>
#include <stdint.h>

struct fb_reorder {
    long sent, arrivals, received, duplicates, lost, out_of_range;
    long reordered;
    double reordered_ratio; /* reordered / received (0 when nothing arrived) */
    long max_extent;
    long *extent_count; /* [e] for e in 1..max_extent; [0] unused */
    long max_offset;
    long *offset_count; /* [o] for o in 1..max_offset; [0] unused */
    int dt;
    long *rd_count; /* [dt + k] for k in -dt..dt */
    long rd_beyond; /* |D| > dt */
};

/* Analyse n logged numbers of `sent` numbered packets. 0, or -1 when out of memory. */
int fb_reorder_analyse(const uint32_t *seq, size_t n, long sent, int dt, struct fb_reorder *r);

void fb_reorder_free(struct fb_reorder *r);

#endif
