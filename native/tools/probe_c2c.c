/* probe_c2c.c - core-to-core latency: two threads pinned to two CPUs bounce one cache line.
 *
 * Why a benchmark tool carries it: small-message shared-memory latency (and, through the
 * progress threads, loopback TCP's) is a few cache-line hand-offs between the ranks' cores.
 * On a virtual machine the hypervisor moves virtual CPUs between physical cores; on the
 * 2-vCPU host this was written on, the hand-off cost switched between about 60 and 230-370 ns
 * within minutes, and 8 B MPI latency with it between 0.29 and 0.58 us, in every transport at
 * once. Recorded before and after each run, it tells a host-state change from a real one.
 *
 * Prints one JSON line: {"type":"probe","probe":"core-to-core","cpus":[a,b],"one_way_ns":M,
 * "best_ns":B,"round_trips":N}, M the median over batches of a one-way hand-off, B the
 * fastest batch's, N the round trips done (fewer than asked when the budget ran out). Exit 77 when fewer than two CPUs are available (automake's "skip").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fb_timer.h"

#define BATCH 100
#define SKIP 77
/* A CPU busy with another task hands the line on only when the scheduler lets the responder
 * run (milliseconds): the probe stops at this budget and reports the batches it finished. */
#define BUDGET_US 500000.0

struct probe {
    _Alignas(64) atomic_long line; /* the bounced cache line, alone in it */
    _Alignas(64) atomic_int stop;
    int cpu_b;
    int pin_error;
};

static int pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *responder(void *arg)
{
    struct probe *p = arg;
    p->pin_error = pin(p->cpu_b);
    for (long i = 0;; i++) {
        while (atomic_load_explicit(&p->line, memory_order_acquire) != 2 * i + 1)
            if (atomic_load_explicit(&p->stop, memory_order_relaxed))
                return NULL;
        atomic_store_explicit(&p->line, 2 * i + 2, memory_order_release);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The first two CPUs this process may run on: where `--bind-to core` puts ranks 0 and 1. */
static int default_cpus(int *a, int *b)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    int found = 0;
    for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
        if (CPU_ISSET(c, &set))
            *(found++ ? b : a) = c;
    return found == 2 ? 0 : -1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: fb-probe-c2c [--cpus A,B] [--round-trips N]\n"
               "  One-way cache-line hand-off time between two CPUs, as one JSON line.\n"
               "  --cpus A,B         the two CPUs (default: the first two this process may use)\n"
               "  --round-trips N    round trips, in batches of %d (default 20000)\n",
            BATCH);
}

int main(int argc, char **argv)
{
    int cpu_a = -1, cpu_b = -1;
    long n = 20000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--cpus") && i + 1 < argc) {
            if (sscanf(argv[++i], "%d,%d", &cpu_a, &cpu_b) != 2 || cpu_a < 0 || cpu_b < 0 ||
                cpu_a == cpu_b) {
                fprintf(stderr, "fb-probe-c2c: --cpus wants two different CPUs A,B\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--round-trips") && i + 1 < argc) {
            n = strtol(argv[++i], NULL, 10);
            if (n < BATCH || n > 100000000) {
                fprintf(stderr, "fb-probe-c2c: --round-trips wants %d..100000000\n", BATCH);
                return 2;
            }
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (cpu_a < 0 && default_cpus(&cpu_a, &cpu_b) != 0) {
        printf("{\"type\":\"skip\",\"reason\":\"fewer than two CPUs available\"}\n");
        return SKIP;
    }

    struct probe *p = aligned_alloc(64, sizeof *p);
    long batches = n / BATCH;
    double *t = malloc(sizeof(double) * (size_t)batches);
    if (!p || !t) {
        fprintf(stderr, "fb-probe-c2c: out of memory\n");
        return 1;
    }
    memset(p, 0, sizeof *p);
    p->cpu_b = cpu_b;
    int rc = pin(cpu_a);
    pthread_t th;
    if (rc == 0)
        rc = pthread_create(&th, NULL, responder, p);
    if (rc != 0) {
        fprintf(stderr, "fb-probe-c2c: CPU %d: %s\n", cpu_a, strerror(rc));
        return 1;
    }
    long done = 0;
    double start = fb_now_us();
    for (long k = 0; k < batches && fb_now_us() - start < BUDGET_US; k++) {
        double t0 = fb_now_us();
        for (long i = k * BATCH; i < (k + 1) * BATCH; i++) {
            atomic_store_explicit(&p->line, 2 * i + 1, memory_order_release);
            while (atomic_load_explicit(&p->line, memory_order_acquire) != 2 * i + 2)
                ;
        }
        t[done++] = (fb_now_us() - t0) * 1e3 / (2.0 * BATCH);
    }
    atomic_store_explicit(&p->stop, 1, memory_order_relaxed);
    pthread_join(th, NULL);
    if (p->pin_error) {
        fprintf(stderr, "fb-probe-c2c: CPU %d: %s\n", cpu_b, strerror(p->pin_error));
        return 1;
    }
    qsort(t, (size_t)done, sizeof *t, cmp_double);
    printf("{\"type\":\"probe\",\"probe\":\"core-to-core\",\"cpus\":[%d,%d],"
           "\"one_way_ns\":%.1f,\"best_ns\":%.1f,\"round_trips\":%ld}\n",
           cpu_a, cpu_b, t[done / 2], t[0], done * BATCH);
    free(t);
    free(p);
    return 0;
}
