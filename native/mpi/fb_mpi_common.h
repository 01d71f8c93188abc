/* fb_mpi_common.h - what every MPI kernel shares: start-up, the meta/result/error/end records,
 * and bringing per-iteration times to rank 0. The options and records themselves come from
 * common/ (no MPI there); this file adds the MPI side.
 */
#ifndef FB_MPI_COMMON_H
#define FB_MPI_COMMON_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fb_buf.h"
#include "fb_json.h"
#include "fb_loop.h"
#include "fb_opts.h"

/* Message buffers of kernels that never read what they receive. Built with SimGrid's smpicc,
 * every simulated rank lives in one process: their buffers share one backing store (thousands
 * of ranks' buffers would not fit), and SMPI copies no payload between shared buffers (the
 * copies were a third of the simulator's busy CPU in a 32-host matrix). Only timing is
 * simulated. */
#ifdef SMPI_SHARED_MALLOC
#define fb_mpi_buf_alloc(len, huge) SMPI_SHARED_MALLOC((len) ? (len) : 1)
#define fb_mpi_buf_free(p) SMPI_SHARED_FREE(p)
#else
#define fb_mpi_buf_alloc(len, huge) fb_buf_alloc_pages(len, huge)
#define fb_mpi_buf_free(p) fb_buf_free(p)
#endif

/* One line of native/kernels.list, compiled into the kernel's main (native/mpi/main.c). */
struct fb_mpi_kernel {
    const char *name;  /* "mpi.allreduce" */
    const char *sizes; /* default --sizes */
    const char *ranks; /* "any" or "even" */
};

/* One running kernel. Created by fb_mpi_start, passed to everything, ended by fb_mpi_finish. */
struct fb_mpi_ctx {
    const char *kernel; /* "mpi.latency" */
    MPI_Comm comm;      /* MPI_COMM_WORLD */
    int rank, nranks;
    struct fb_opts opts;
    bool corrupt; /* FABENCH_CORRUPT=1: flip one received byte (tests of the checker) */
    bool corrupted; /* already done once on this rank */
    /* FABENCH_SHARED_CORES=1: fabench's launch found more ranks than cores (a testbed's
     * hosts are namespaces of one machine): a kernel whose ranks wait long in a measurement
     * may wait patiently (fb_mpi_patient_waitall) */
    bool shared_cores;
    double t_start_us; /* after MPI_Init: under SimGrid the clock is simulated only from there */
    struct fb_json json;
};

/* Parse options (before MPI_Init, so --help and bad options need no MPI; the kernel's own
 * options through `own`, NULL: none), MPI_Init, check the number of ranks (at least min_ranks;
 * even where the kernel's line says so) and print the meta record on rank 0. Returns -1 if the
 * kernel should exit now with *exit_code. */
int fb_mpi_start(struct fb_mpi_ctx *ctx, const struct fb_mpi_kernel *k, enum fb_kernel_class cls,
                 int min_ranks, const struct fb_own_opts *own, int *argc, char ***argv,
                 int *exit_code);

/* A barrier for ranks with nothing to do meanwhile (idle ranks of a two-rank kernel, the
 * matrix's ranks outside an isolated pair): MPI_Ibarrier, then MPI_Test after naps that
 * start at FB_PARK_NS and double up to FB_PARK_MAX_NS, so they do not spin on a core the
 * measured ranks may need: at 50 us naps for good, a parked rank still took half the CPU
 * time of a measured one on a loaded 2-core host (tests/native: test_parked_ranks_*). A rank
 * leaves up to one long nap after the last arrival: never use it where ranks start a
 * measurement together. */
#define FB_PARK_NS 50000L
#define FB_PARK_MAX_NS 2000000L
void fb_mpi_parked_barrier(MPI_Comm comm);

/* MPI_Waitall for ranks that share cores: test the requests as MPI_Waitall would, and once
 * the wait has gone on for FB_PATIENT_AFTER_US, nap between tests for 1/FB_PATIENT_SHARE of
 * the time waited so far, at most max_nap_ns (MPI_Waitall where that is under
 * FB_PATIENT_MIN_NAP_NS). Shorter waits are timed as before. Each nap costs what it delays
 * the wait's end, and, for a rank that moves data while it waits, what its link goes idle:
 * Open MPI's TCP transport reads and writes its sockets only when a rank tests, and naps of a
 * 64th of the wait made a local 4 MiB window over TCP 30-50 % slower (over shared memory it
 * did not matter). So the caps, measured on a 4-host testbed with 50 and 200 Mbit/s links:
 * - a window naps at most as long as its link carries FB_PATIENT_NAP_BYTES at the rate of its
 *   last window to the same peer, so only links under ~80 Mbit/s nap in a window at all (4 KiB
 *   read the 200 Mbit/s link 2 % slow);
 * - a lone receive of at most FB_PATIENT_SMALL bytes (a window's ack, a ping or pong, whole
 *   in one fragment: the rank has nothing to move) at most FB_PATIENT_ACK_NAP_NS (2 ms for
 *   the ack read the 200 Mbit/s link 1 % slow);
 * - a barrier between phases up to FB_PARK_MAX_NS (fb_mpi_patient_barrier).
 * With these caps both links read as without naps (5.95-5.97, 23.81-23.94 MB/s) for 11
 * instead of 18 CPU-s of the machine. What it spares: a matrix on six namespace hosts over two
 * cores spent 88 % of the machine's CPU samples in its ranks' progress loops (poll,
 * sched_yield), ranks waiting seconds on windows across a 50 Mbit/s uplink or beside them: 66
 * CPU-s, 30 with the naps. Under a simulator (fb_mpi_global_clock) a nap costs simulated time:
 * MPI_Waitall there. Returns MPI's code. */
#define FB_PATIENT_AFTER_US 1000.0
#define FB_PATIENT_SHARE 64
#define FB_PATIENT_MIN_NAP_NS 100000L
#define FB_PATIENT_NAP_BYTES 1024.0
#define FB_PATIENT_ACK_NAP_NS 250000L
#define FB_PATIENT_SMALL 4096
int fb_mpi_patient_waitall(int n, MPI_Request *reqs, MPI_Status *stats, long max_nap_ns);

/* MPI_Barrier, left patiently (fb_mpi_patient_waitall): unlike fb_mpi_parked_barrier, a rank
 * that arrived within FB_PATIENT_AFTER_US of the last leaves with it, and one that waited
 * longer leaves at most 1/FB_PATIENT_SHARE of its wait later (the phase that follows must
 * then start with a warm-up). */
void fb_mpi_patient_barrier(MPI_Comm comm);

/* The end record on rank 0, MPI_Finalize, free. Returns the process exit code (0). */
int fb_mpi_finish(struct fb_mpi_ctx *ctx);

/* Stop all ranks over a usage problem found after MPI_Init (e.g. too few ranks): message on
 * stderr from rank 0, exit status 2. */
void fb_mpi_usage_exit(struct fb_mpi_ctx *ctx, const char *msg);

/* One result record (rank 0 only). times_min/times_mean may be NULL. */
struct fb_mpi_result {
    size_t size;
    long iterations, warmup;
    long warmup_used; /* with `settled`: what the settled warm-up ran (fb_result_head) */
    bool settled;
    const char *datatype;
    unsigned long long count;
    double bytes_per_sample, messages_per_sample;
    const double *times, *times_min, *times_mean;
    long round; /* which sweep over the sizes (--rounds); reported when rounds > 1 */
    long iterations_cap; /* --stop-precision: the count the size could run (fb_stop.h) */
    double stop_reached; /* and the precision it reached; INFINITY: not judged */
    double osu_avg;      /* collectives: OSU's average (us) */
    long osu_iterations; /* the calls behind it; 0: not measured (no osu_avg field) */
    /* A kernel's own fields, written before the times (NULL: none). */
    void (*extra)(struct fb_json *j, const void *arg);
    const void *extra_arg;
};
void fb_mpi_emit_result(struct fb_mpi_ctx *ctx, const struct fb_mpi_result *r);

/* Validation failure on this rank: error record on stdout, message on stderr, MPI_Abort(3).
 * `expected`/`got` are the byte (or float element) values. */
void fb_mpi_validation_failed(struct fb_mpi_ctx *ctx, size_t size, long iteration,
                              long long offset, double expected, double got);

/* Check `len` received bytes sent by rank `sender` (their logical offset at the sender starts at
 * off0) for iteration `iter` of message size `size`; on a mismatch report offset
 * report_base + index and abort. */
void fb_mpi_check_bytes(struct fb_mpi_ctx *ctx, const void *buf, size_t len, uint64_t off0,
                        size_t size, long iter, int sender, size_t report_base);

/* Flip one byte of buf[0..len) once per process if FABENCH_CORRUPT=1 and this rank is the
 * `designated` receiver of the kernel. Call between receiving and checking. */
void fb_mpi_maybe_corrupt(struct fb_mpi_ctx *ctx, void *buf, size_t len, bool designated);

/* True where every rank reads one clock (SimGrid's simulated clock): --warmup-sync clock. */
bool fb_mpi_global_clock(void);

/* Collective over ctx->comm, for --warmup-sync clock: a fan-in to rank 0, which sends back a
 * start time a margin ahead on the shared clock; every rank sleeps until then, so all leave at
 * the same instant. Aborts if the start time reached a rank too late. */
void fb_mpi_start_together(struct fb_mpi_ctx *ctx);

/* Per-iteration arrays to rank 0 (collective over comm): for each of the n iterations the
 * max, min and mean over the ranks of comm. The outputs are used on rank 0 only (others may
 * pass NULL). */
void fb_mpi_reduce_times(MPI_Comm comm, const double *local, size_t n, double *out_max,
                         double *out_min, double *out_mean);

/* Same, the max only. */
void fb_mpi_reduce_max(MPI_Comm comm, const double *local, size_t n, double *out_max);

/* The MPI side of the loop engine (fb_loop.h): operations are queued and run by wait(), a lone
 * one as the blocking call (MPI_Send / MPI_Recv, as OSU's ping-pong and acks), several as
 * Isend/Irecv in the order posted and one MPI_Waitall (OSU's windows); start() issues the
 * queued ones as Isend/Irecv at once (a window's receives posted ahead), and the next wait()
 * completes them with the rest. */
struct fb_mpi_op {
    void *buf;
    int len, tag;
    bool send;
};
struct fb_mpi_xfer {
    MPI_Comm comm;
    int peer;
    int n, cap;
    int started; /* ops[0, started) are issued (start) and have their request */
    struct fb_mpi_op *ops;
    MPI_Request *reqs;
    MPI_Status *stats; /* not MPI_STATUSES_IGNORE: GCC 12 misreads MPICH's access attributes */
    /* windows and lone small receives through fb_mpi_patient_waitall
     * (FABENCH_SHARED_CORES) */
    bool patient;
    double bytes_per_us; /* the last window's rate, with rate_peer: how long a window naps */
    int rate_peer;
};
/* Hooks into *x for `cap` operations in flight at most; 0, or -1 out of memory. */
int fb_mpi_xfer_init(struct fb_mpi_xfer *m, struct fb_xfer *x, MPI_Comm comm, int peer, int cap);
void fb_mpi_xfer_free(struct fb_mpi_xfer *m);

#endif
