/* fb-mpi-bcast: see coll.c and docs/kernel-protocol.md. */
#include "coll.h"

int main(int argc, char **argv)
{
    return fb_coll_main(FB_COLL_BCAST, argc, argv);
}
