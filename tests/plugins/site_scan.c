/* site_scan.c - a site's own collective, outside fabench's source: MPI_Scan (a prefix sum)
 * as one row for fabench's collective engine, run by fb_coll_run. Built by
 * tests/test_plugins.py against native/mpi/coll.c and native/common/ (docs/DEVELOPING.md). */
#include "coll.h"

static void scan_buffers(const struct coll *c, size_t size, size_t *sbytes, size_t *rbytes)
{
    (void)c;
    *sbytes = *rbytes = size;
}

static void scan_call(struct coll *c, int count)
{
    MPI_Scan(c->sbuf, c->rbuf, count, c->dt, MPI_SUM, c->comm);
}

static const struct coll_op SCAN = {"site.scan", COLL_OPERANDS, scan_buffers, scan_call,
                                    NULL, NULL};

int main(int argc, char **argv)
{
    static const struct fb_mpi_kernel k = {"site.scan", "4:1K", "any"};
    return fb_coll_run(&k, &SCAN, argc, argv);
}
