/* t_loop.c - the order in which the loop engine (fb_loop.c) posts, starts and completes a
 * window receiver's operations: the next window's receives go out before the ack, and a
 * window whose receives went out ahead does not post them again. The transport here only
 * writes down each call; the kernels' runs under mpirun (tests/native) move the bytes. */
#define T_NAME "t_loop"
#include "t_expect.h"

#include <string.h>

#include "fb_loop.h"

struct log {
    char text[512];
    char *rbuf; /* the first window's buffer: receives are named by their window, a or b */
};

static void add(struct log *l, const char *word)
{
    strncat(l->text, word, sizeof(l->text) - strlen(l->text) - 1);
}

static int recv_hook(void *c, void *buf, size_t len, int tag)
{
    struct log *l = c;
    (void)len;
    add(l, tag == FB_TAG_ACK ? "r! " : (char *)buf == l->rbuf ? "ra " : "rb ");
    return 0;
}

static int send_hook(void *c, void *buf, size_t len, int tag)
{
    (void)buf, (void)len;
    add(c, tag == FB_TAG_ACK ? "s! " : "s ");
    return 0;
}

static int start_hook(void *c)
{
    add(c, "start ");
    return 0;
}

static int wait_hook(void *c)
{
    add(c, "wait ");
    return 0;
}

int main(void)
{
    char a[8], b[8], s[8];
    struct log l = {.rbuf = a};
    struct fb_xfer x = {.post_recv = recv_hook, .post_send = send_hook, .start = start_hook,
                        .wait = wait_hook, .c = &l};
    double t = 0;

    /* three windows of 2 into a, b, a: the ack of each but the last left in flight */
    EXPECT(!fb_window(&x, false, s, a, b, 0, 1, 2, &t), "window 1");
    EXPECT(!fb_window(&x, false, s, b, a, 0, 1, 2, &t), "window 2");
    EXPECT(!fb_window(&x, false, s, a, NULL, 0, 1, 2, &t), "window 3");
    const char *want = "ra ra wait rb rb start s! start "
                       "wait ra ra start s! start "
                       "wait s! wait ";
    EXPECT(!strcmp(l.text, want), "receiver: got '%s', want '%s'", l.text, want);
    EXPECT(!x.ahead, "nothing posted ahead after the last window");

    /* posted ahead by the caller (a validating kernel, after its check) */
    l.text[0] = '\0';
    EXPECT(!fb_window_post(&x, a, 0, 1, 2), "post");
    EXPECT(!fb_window(&x, false, s, a, NULL, 0, 1, 2, &t), "window after post");
    want = "ra ra start wait s! wait ";
    EXPECT(!strcmp(l.text, want), "posted ahead: got '%s', want '%s'", l.text, want);

    /* the sender: OSU's window, then the ack's receive on its own (no prepost) */
    l.text[0] = '\0';
    EXPECT(!fb_window(&x, true, s, a, NULL, 0, 1, 2, &t), "sender");
    want = "s s wait r! wait ";
    EXPECT(!strcmp(l.text, want), "sender: got '%s', want '%s'", l.text, want);
    return t_verdict();
}
