/* t_expect.h - the C unit tests' one check and verdict (no framework: ctest reads the exit
 * status). Include once per test program; T_NAME names the program in its messages. */
#ifndef T_EXPECT_H
#define T_EXPECT_H

#include <stdio.h>

static int failures;

/* A failed condition is reported with its line and a printf-style explanation, and counted;
 * the test goes on, so one run shows every failure. */
#define EXPECT(cond, ...)                                                                      \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, T_NAME ":%d: FAIL %s: ", __LINE__, #cond);                         \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

/* main's return value: 0 when every EXPECT held. */
static inline int t_verdict(void)
{
    if (failures) {
        fprintf(stderr, T_NAME ": %d failure(s)\n", failures);
        return 1;
    }
    printf(T_NAME ": ok\n");
    return 0;
}

#endif
