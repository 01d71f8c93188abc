"""SIGTERM, SIGHUP and SIGINT end fabench the same way: an exception that unwinds every run
in progress, so each launch it started is torn down (fabench.host.process.terminate) and the run
and its campaign are stored as `interrupted`. The default SIGTERM/SIGHUP action would end
fabench at once and leave mpirun and its busy ranks running under PID 1 (their own session
keeps a terminal's hang-up from reaching them)."""

import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

CAUGHT = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
REDELIVER_S = 0.05


class Interrupted(KeyboardInterrupt):
    """A signal asked fabench to stop; a KeyboardInterrupt, so every `except
    KeyboardInterrupt` that marks a run interrupted handles it too."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


_local = threading.local()  # .depth: critical sections the thread is in
_pending: list[int] = []


def enter_critical() -> None:
    """A store statement starts: a signal now is raised when it is done (:func:`leave_critical`),
    not inside it. Raised inside SQLite's C code, it left the statement active: the run could
    then not be marked interrupted ("cannot commit transaction - SQL statements in progress")
    and fabench exited 2 on a store error instead of 130 on the Ctrl-C."""
    _local.depth = getattr(_local, "depth", 0) + 1


def leave_critical() -> None:
    _local.depth -= 1
    if (not _local.depth and _pending
            and threading.current_thread() is threading.main_thread()):
        raise Interrupted(_pending.pop())


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # Once: a second signal during the teardown (which is bounded) would cut it short.
    for sig in CAUGHT:
        signal.signal(sig, signal.SIG_IGN)
    if getattr(_local, "depth", 0):  # the handler runs in the main thread: its sections
        _pending.append(signum)
        return
    raise Interrupted(signum)


_armed: tuple[signal.Signals, ...] = ()
_next_hook = sys.unraisablehook


def _deliver_again(unraisable: Any) -> None:
    """An Interrupted raised where Python cannot propagate it is only printed: in an at-fork
    hook (logging's lock release runs in the parent after every fork, so a SIGTERM during a
    Popen landed there), a finalizer or a weakref callback. The handlers were already set to
    ignore, so fabench went on with the next kernel and never ended (1 in ~9 SIGTERMs between
    two kernels of a run). Re-arm and send the signal again from another thread, a moment
    later: sent from here it would be raised inside this hook and be lost again."""
    exc = unraisable.exc_value
    if isinstance(exc, Interrupted):
        for sig in _armed:
            signal.signal(sig, _on_signal)
        again = threading.Timer(REDELIVER_S, os.kill, (os.getpid(), exc.signum))
        again.daemon = True
        again.start()
        return
    _next_hook(unraisable)


def raise_on_signals() -> None:
    """From now on each caught signal raises Interrupted in the main thread. A signal that is
    ignored already (nohup's SIGHUP, a background job's SIGINT) stays ignored."""
    global _armed
    _armed = tuple(sig for sig in CAUGHT if signal.getsignal(sig) is not signal.SIG_IGN)
    for sig in _armed:
        signal.signal(sig, _on_signal)
    sys.unraisablehook = _deliver_again
