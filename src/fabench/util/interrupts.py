"""SIGTERM, SIGHUP and SIGINT end fabench the same way: an exception that unwinds every run
in progress, so each launch it started is torn down (fabench.host.process.terminate) and the run
and its campaign are stored as `interrupted`. The default SIGTERM/SIGHUP action would end
fabench at once and leave mpirun and its busy ranks running under PID 1 (their own session
keeps a terminal's hang-up from reaching them)."""

import signal
from types import FrameType

CAUGHT = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class Interrupted(KeyboardInterrupt):
    """A signal asked fabench to stop; a KeyboardInterrupt, so every `except
    KeyboardInterrupt` that marks a run interrupted handles it too."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # Once: a second signal during the teardown (which is bounded) would cut it short.
    for sig in CAUGHT:
        signal.signal(sig, signal.SIG_IGN)
    raise Interrupted(signum)


def raise_on_signals() -> None:
    """From now on each caught signal raises Interrupted in the main thread. A signal that is
    ignored already (nohup's SIGHUP, a background job's SIGINT) stays ignored."""
    for sig in CAUGHT:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _on_signal)
