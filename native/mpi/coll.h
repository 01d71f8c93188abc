/* coll.h - the collective engine behind fb-mpi-{allreduce,alltoall,...,barrier}. */
#ifndef FB_COLL_H
#define FB_COLL_H

enum fb_coll_kind {
    FB_COLL_ALLREDUCE, /* MPI_FLOAT, MPI_SUM, count = size / 4 */
    FB_COLL_ALLTOALL,  /* MPI_CHAR, size = bytes per peer */
    FB_COLL_ALLGATHER, /* MPI_CHAR, size = bytes per rank */
    FB_COLL_GATHER,    /* MPI_CHAR to rank 0, size = bytes per rank */
    FB_COLL_BCAST,     /* MPI_CHAR from rank 0 */
    FB_COLL_REDUCE,    /* MPI_FLOAT, MPI_SUM to rank 0, count = size / 4 */
    FB_COLL_BARRIER,   /* one result, size 0 */
};

/* Run one kernel to completion; returns the process exit status. */
int fb_coll_main(enum fb_coll_kind kind, int argc, char **argv);

#endif
