/* fb_pattern.h - the --validate pattern.
 *
 * Every byte a kernel sends is a function of (message size, iteration, sending rank, offset),
 * so a stale buffer, a message from the wrong iteration or peer, a shifted copy or a flipped
 * byte are all caught. `offset` is the byte's position in the sender's logical buffer; a
 * receiver that holds a part of it passes the offset its first byte had at the sender.
 *
 * Reductions use small per-element integers (0..15) from the same function, so the float sum
 * over any realistic number of ranks is exact and can be compared with ==.
 */
#ifndef FB_PATTERN_H
#define FB_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* Seed of one (size, iteration, rank) triple. */
uint64_t fb_pattern_seed(uint64_t size, int64_t iter, int rank);

/* The byte at logical offset `off` for a seed. */
static inline uint8_t fb_pattern_byte(uint64_t seed, uint64_t off)
{
    uint32_t h = (uint32_t)seed + (uint32_t)off * 2654435761u + (uint32_t)(off >> 32);
    h ^= h >> 15;
    h ^= (uint32_t)(seed >> 32) + (h >> 24);
    return (uint8_t)h;
}

/* Fill buf[0..len) with the pattern of (size, iter, rank) starting at logical offset off0. */
void fb_pattern_fill(void *buf, size_t len, uint64_t off0, uint64_t size, int64_t iter, int rank);

/* Check buf[0..len) against the pattern. Returns -1 if every byte matches, else the index
 * into buf of the first mismatch, with the expected and received bytes stored if non-NULL. */
long long fb_pattern_check(const void *buf, size_t len, uint64_t off0, uint64_t size,
                           int64_t iter, int rank, uint8_t *expected, uint8_t *got);

/* Element types of reduction operands (--datatype). */
enum fb_elem { FB_ELEM_CHAR, FB_ELEM_INT, FB_ELEM_FLOAT, FB_ELEM_DOUBLE };

size_t fb_elem_size(enum fb_elem e);

/* Reduction operands of any element type: element i of rank `rank` is a small integer (0..15)
 * of that type. */
void fb_pattern_fill_operands(void *buf, enum fb_elem e, size_t count, uint64_t size,
                              int64_t iter, int rank);

/* Check an MPI_SUM over ranks 0..nranks-1 of fb_pattern_fill_operands operands. A char sum
 * wraps modulo 256 (as the MPI library's signed char addition does past 8 ranks). Returns -1
 * or the first mismatching element index, with the expected and received values stored if
 * non-NULL. */
long long fb_pattern_check_sum(const void *buf, enum fb_elem e, size_t count, uint64_t size,
                               int64_t iter, int nranks, double *expected, double *got);

#endif
