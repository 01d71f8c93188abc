/* fb_boot_mpi.c - bootstrap over MPI when the kernel is started by mpirun: ranks 0 and 1 of
 * MPI_COMM_WORLD are the client and the server; MPI carries only the rendezvous, never data. */
#include "fb_boot.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int boot_barrier(struct fb_boot *b)
{
    (void)b;
    return MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

static int boot_exchange(struct fb_boot *b, const void *in, size_t len, void *out, size_t cap,
                         size_t *got)
{
    int peer = 1 - b->index;
    unsigned long n = len, peer_n = 0;
    MPI_Sendrecv(&n, 1, MPI_UNSIGNED_LONG, peer, 7, &peer_n, 1, MPI_UNSIGNED_LONG, peer, 7,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (peer_n > cap) {
        fprintf(stderr, "bootstrap: peer blob of %lu bytes exceeds %zu\n", peer_n, cap);
        return -1;
    }
    MPI_Sendrecv(in, (int)len, MPI_BYTE, peer, 8, out, (int)peer_n, MPI_BYTE, peer, 8,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (got)
        *got = peer_n;
    return 0;
}

static void boot_finalize(struct fb_boot *b)
{
    (void)b;
    MPI_Finalize();
}

int fb_boot_mpi_init(struct fb_boot *b, int *argc, char ***argv)
{
    memset(b, 0, sizeof(*b));
    b->name = "mpi";
    b->fd = -1;
    b->barrier = boot_barrier;
    b->spin_barrier = boot_barrier; /* MPI libraries poll in MPI_Barrier */
    b->exchange = boot_exchange;
    b->finalize = boot_finalize;
    MPI_Init(argc, argv);
    int size = 0, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "transport kernels run with exactly 2 ranks under mpirun (got %d)\n",
                    size);
        MPI_Finalize();
        return -1;
    }
    b->size = size;
    b->index = rank;
    return 0;
}
