/* coll.h - the collective engine behind fb-mpi-{allreduce,alltoall,...,barrier}. */
#ifndef FB_COLL_H
#define FB_COLL_H

#include <mpi.h>
#include <stddef.h>

#include "fb_mpi_common.h"
#include "fb_pattern.h"

/* One rank's state for a run. */
struct coll {
    const struct coll_op *op;
    struct fb_mpi_ctx *ctx;
    MPI_Comm comm;
    int rank, n;
    char *sbuf, *rbuf;
    /* the elements moved (--datatype): count = size / esize, sizes below one skipped */
    MPI_Datatype dt;
    enum fb_elem elem;
    size_t esize; /* 0: no data */
    const char *dtname;
};

/* What a collective moves: data it only moves (MPI_CHAR unless --datatype), reduction
 * operands (MPI_FLOAT unless --datatype) or nothing (one result at size 0). */
enum coll_data { COLL_BYTES, COLL_OPERANDS, COLL_NONE };

/* One collective: one row of coll.c's OPS (or a site's own, run by fb_coll_run). `buffers` gives the send and receive bytes for a
 * message size; `call` makes the MPI call for `count` elements; `fill` (before the barrier)
 * and `check` (after t1) serve --validate, NULL where there is nothing to fill or check. */
struct coll_op {
    const char *name;
    enum coll_data data;
    void (*buffers)(const struct coll *c, size_t size, size_t *sbytes, size_t *rbytes);
    void (*call)(struct coll *c, int count);
    void (*fill)(struct coll *c, size_t size, long iter);
    void (*check)(struct coll *c, size_t size, long iter);
};

/* Run the collective named k->name (a row of coll.c's table) to completion; returns the
 * process exit status (2 when no row has that name). */
int fb_coll_main(const struct fb_mpi_kernel *k, int argc, char **argv);

/* Run the collective `op` under the engine (options, timing, records, --validate): how a
 * collective outside coll.c's table (a site's own, docs/DEVELOPING.md) is measured. */
int fb_coll_run(const struct fb_mpi_kernel *k, const struct coll_op *op, int argc, char **argv);

#endif
