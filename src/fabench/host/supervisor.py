"""The supervisor of one fabench process (started by :func:`fabench.host.process.popen` with its
first child, in a session of its own so that a signal to fabench's process group does not
reach it): it waits until fabench ends, however it ends, SIGKILL included, and then ends every
process still carrying fabench's owner tag and removes fabench's temporary directories."""

import signal
import sys

from .leftovers import sweep


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        return 2
    # The terminal's Ctrl-C and a hang-up are fabench's to handle, not ours.
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    try:
        while sys.stdin.buffer.read(65536):
            pass
    except OSError:
        pass
    sweep({argv[0]})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
