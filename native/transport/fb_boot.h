/* fb_boot.h - how the two sides of a transport kernel find each other.
 *
 * The kernels never call MPI or open their own rendezvous: they see a group of two members
 * (index 0 = client, the timing side; index 1 = server), a barrier and an exchange of one small
 * blob with the peer (UCX worker addresses, libfabric endpoint names, data ports). Two
 * implementations: fb_boot_tcp.c (a TCP rendezvous, no MPI needed) and fb_boot_mpi.c (when the
 * binary is built with FB_BOOT_MPI and started by mpirun). The same kernel code runs on both.
 */
#ifndef FB_BOOT_H
#define FB_BOOT_H

#include <stdbool.h>
#include <stddef.h>

struct fb_boot_cfg {
    bool server;          /* TCP rendezvous: this side listens (index 1) */
    const char *peer;     /* client: the server's address */
    const char *bind;     /* server: address to listen on (NULL: any) */
    int port;             /* rendezvous port; 0 on the server: pick one and announce it */
    double timeout_s;     /* how long to wait for the peer */
    const char *kernel;   /* for messages and the listen record */
};

struct fb_boot {
    int size, index;
    const char *name; /* "tcp" or "mpi" */
    int (*barrier)(struct fb_boot *b);
    /* A barrier that never sleeps, for between timed iterations: a side that blocked in it
     * comes back late on a busy host (the scheduler runs something else meanwhile), and that
     * lateness lands in the next timed region. */
    int (*spin_barrier)(struct fb_boot *b);
    /* Send `len` bytes to the peer and receive the peer's blob into out[0..cap); *got is its
     * length. -1 on failure or if the peer's blob does not fit. */
    int (*exchange)(struct fb_boot *b, const void *in, size_t len, void *out, size_t cap,
                    size_t *got);
    void (*finalize)(struct fb_boot *b);
    int fd;      /* TCP rendezvous: the control connection (-1 under MPI) */
    int port;    /* TCP rendezvous: the port actually used */
};

/* Start the bootstrap. With FB_BOOT_MPI this calls MPI_Init and ignores the TCP settings. The
 * TCP server prints {"type":"listen","kernel":..,"port":N} on stdout once it listens, so a
 * launcher that asked for port 0 learns where to point the client. 0 on success, -1 with a
 * message on stderr. */
int fb_boot_init(struct fb_boot *b, const struct fb_boot_cfg *cfg, int *argc, char ***argv);

/* True when the binary was built for MPI bootstrap (decided at compile time). */
bool fb_boot_is_mpi(void);

/* Index of this process before fb_boot_init (MPI: from the launcher's environment, so a bad
 * option is reported once). -1 when unknown. */
int fb_boot_early_index(void);

#endif
