/* t_pattern: the --validate checker finds a flipped byte at its exact offset (no MPI). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fb_buf.h"
#include "fb_pattern.h"

#define T_NAME "t_pattern"
#include "t_expect.h"

static void bytes_roundtrip(size_t len)
{
    unsigned char *buf = fb_buf_alloc(len);
    uint8_t want = 0, got = 0;
    fb_pattern_fill(buf, len, 0, len, 7, 3);
    EXPECT(fb_pattern_check(buf, len, 0, len, 7, 3, &want, &got) == -1, "len %zu clean", len);

    /* every position of a few: first, middle, last */
    size_t where[] = {0, len / 2, len - 1};
    for (size_t w = 0; w < 3; w++) {
        size_t off = where[w];
        unsigned char orig = buf[off];
        buf[off] ^= 0x01;
        long long bad = fb_pattern_check(buf, len, 0, len, 7, 3, &want, &got);
        EXPECT(bad == (long long)off, "len %zu flipped %zu, reported %lld", len, off, bad);
        EXPECT(want == orig && got == (uint8_t)(orig ^ 0x01), "len %zu want %u got %u", len,
               want, got);
        buf[off] = orig;
    }

    /* the pattern depends on iteration, rank and size: stale or misrouted data fails */
    if (len >= 16) {
        EXPECT(fb_pattern_check(buf, len, 0, len, 8, 3, NULL, NULL) >= 0, "iteration %zu", len);
        EXPECT(fb_pattern_check(buf, len, 0, len, 7, 4, NULL, NULL) >= 0, "rank %zu", len);
        EXPECT(fb_pattern_check(buf, len, 0, len + 1, 7, 3, NULL, NULL) >= 0, "size %zu", len);
        EXPECT(fb_pattern_check(buf + 1, len - 1, 0, len, 7, 3, NULL, NULL) >= 0, "shift %zu",
               len);
    }
    fb_buf_free(buf);
}

static void offsets(void)
{
    /* a receiver holding bytes [100, 200) of the sender's buffer checks them with off0 = 100 */
    unsigned char whole[300], part[100];
    fb_pattern_fill(whole, sizeof(whole), 0, 300, 1, 2);
    fb_pattern_fill(part, sizeof(part), 100, 300, 1, 2);
    EXPECT(memcmp(whole + 100, part, sizeof(part)) == 0, "off0 fill");
    EXPECT(fb_pattern_check(whole + 100, 100, 100, 300, 1, 2, NULL, NULL) == -1, "off0 check");
    /* a 256-byte shift is not invisible */
    EXPECT(fb_pattern_check(whole, 44, 256, 300, 1, 2, NULL, NULL) >= 0, "256 shift");
}

/* Every --datatype element type, summed as the MPI library does: a signed char sum over 20
 * ranks (up to 300) wraps, and the check expects the wrapped value. */
static void typed_reductions(void)
{
    enum { COUNT = 777, RANKS = 20 };
    for (int e = FB_ELEM_CHAR; e <= FB_ELEM_DOUBLE; e++) {
        size_t es = fb_elem_size((enum fb_elem)e);
        unsigned char mine[COUNT * 8], sum[COUNT * 8];
        memset(sum, 0, sizeof(sum));
        for (int r = 0; r < RANKS; r++) {
            fb_pattern_fill_operands(mine, (enum fb_elem)e, COUNT, COUNT * es, 5, r);
            for (size_t i = 0; i < COUNT; i++) {
                if (e == FB_ELEM_CHAR) {
                    sum[i] = (unsigned char)(sum[i] + mine[i]); /* two's complement add */
                } else if (e == FB_ELEM_INT) {
                    int a, b;
                    memcpy(&a, sum + i * es, es), memcpy(&b, mine + i * es, es);
                    a += b;
                    memcpy(sum + i * es, &a, es);
                } else if (e == FB_ELEM_FLOAT) {
                    float a, b;
                    memcpy(&a, sum + i * es, es), memcpy(&b, mine + i * es, es);
                    a += b;
                    memcpy(sum + i * es, &a, es);
                } else {
                    double a, b;
                    memcpy(&a, sum + i * es, es), memcpy(&b, mine + i * es, es);
                    a += b;
                    memcpy(sum + i * es, &a, es);
                }
            }
        }
        double want = 0, got = 0;
        EXPECT(fb_pattern_check_sum(sum, (enum fb_elem)e, COUNT, COUNT * es, 5, RANKS, &want,
                                    &got) == -1, "type %d: sum", e);
        sum[300 * es] ^= 0x01;
        long long bad = fb_pattern_check_sum(sum, (enum fb_elem)e, COUNT, COUNT * es, 5, RANKS,
                                             &want, &got);
        EXPECT(bad == 300 && want != got, "type %d: reported %lld (%g vs %g)", e, bad, want, got);
    }
    /* the wrap is real at 20 ranks: some char sum exceeds 127 before wrapping */
    signed char c[COUNT];
    unsigned char u[COUNT] = {0};
    for (int r = 0; r < RANKS; r++) {
        fb_pattern_fill_operands(c, FB_ELEM_CHAR, COUNT, COUNT, 5, r);
        for (size_t i = 0; i < COUNT; i++)
            u[i] = (unsigned char)(u[i] + (unsigned char)c[i]);
    }
    int wrapped = 0;
    for (size_t i = 0; i < COUNT; i++)
        wrapped += u[i] > 127;
    EXPECT(wrapped > 0, "no element wrapped");
}

int main(void)
{
    size_t lens[] = {1, 2, 3, 8, 255, 256, 257, 4096, 65537, (size_t)4 << 20};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        bytes_roundtrip(lens[i]);
    offsets();
    typed_reductions();
    return t_verdict();
}
