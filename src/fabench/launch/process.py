"""Run one command, stream its JSON-lines stdout, keep its stderr, clean up on Ctrl-C."""

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import KernelError
from ..records import KernelOutput, ResultRecord, parse_line

STDERR_KEEP = 64 * 1024


@dataclass
class ProcessOutcome:
    output: KernelOutput
    returncode: int
    stderr: str
    elapsed_s: float
    timed_out: bool = False


def dispatch(obj: dict[str, Any], out: KernelOutput) -> None:
    kind = obj.get("type")
    if kind == "meta":
        out.meta.update(obj)
    elif kind == "result":
        out.results.append(ResultRecord.from_json(obj))
    elif kind == "error":
        out.errors.append(obj)
    elif kind == "skip":
        out.skip_reason = str(obj.get("reason", "skipped"))
    elif kind == "end":
        out.end = obj


def run_streaming(argv: list[str], env: dict[str, str], timeout_s: float,
                  on_record: Callable[[dict[str, Any]], None] | None = None,
                  cwd: str | None = None) -> ProcessOutcome:
    """Start argv in its own session so that Ctrl-C or a timeout ends the whole launch tree
    (mpirun and its ranks) we started, and nothing else."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, bufsize=1, start_new_session=True, cwd=cwd)
    except OSError as exc:
        raise KernelError(f"cannot start {argv[0]}: {exc}") from exc
    out = KernelOutput()
    err_chunks: list[str] = []

    def drain_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err_chunks.append(line)

    t = threading.Thread(target=drain_stderr, daemon=True)
    t.start()
    timer = threading.Timer(timeout_s, _terminate, args=(proc,))
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            obj = parse_line(line)
            if obj is None:
                continue
            dispatch(obj, out)
            if on_record is not None:
                on_record(obj)
        proc.wait()
    except BaseException:
        _terminate(proc)
        raise
    finally:
        timer.cancel()
        t.join(timeout=5)
    stderr = "".join(err_chunks)
    timed_out = time.monotonic() - start >= timeout_s and proc.returncode != 0
    return ProcessOutcome(out, proc.returncode, stderr[-STDERR_KEEP:],
                          time.monotonic() - start, timed_out)


def _terminate(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
