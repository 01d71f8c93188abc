/* coll.h - the collective engine behind fb-mpi-{allreduce,alltoall,...,barrier}. */
#ifndef FB_COLL_H
#define FB_COLL_H

#include "fb_mpi_common.h"

/* Run the collective named k->name (a row of coll.c's table) to completion; returns the
 * process exit status (2 when no row has that name). */
int fb_coll_main(const struct fb_mpi_kernel *k, int argc, char **argv);

#endif
