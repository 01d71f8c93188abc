"""What fabench does while it imports a command's code (fabench.util.startup): numpy's OpenBLAS
loads with one thread (its pool polls for work on the cores the kernels being timed need),
and the garbage collector pauses. Each BLAS case is a fresh interpreter: OpenBLAS reads its
thread count once, when numpy loads it."""

import gc
import os
import subprocess
import sys

import pytest

REPORT = "import numpy, os, sys; print(len(os.listdir('/proc/self/task')), " \
         "os.environ.get('OPENBLAS_NUM_THREADS'))"


def _threads(code: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**clean, **(env or {})}, check=True, timeout=60)
    tasks, var = p.stdout.split()
    return int(tasks), var


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: OpenBLAS starts no pool")
def test_numpy_loads_with_one_thread_and_the_environment_is_given_back() -> None:
    # the contrast first: numpy alone starts a thread per core here
    assert _threads(REPORT)[0] >= 2
    inside = "from fabench.util.startup import loading\n" \
             "with loading():\n    import numpy\n" + REPORT
    assert _threads(inside) == (1, "None")
    # a count the user chose is theirs
    assert _threads(inside, {"OPENBLAS_NUM_THREADS": "2"}) == (2, "2")


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: OpenBLAS starts no pool")
def test_a_command_whose_code_loads_numpy_runs_with_one_blas_thread() -> None:
    code = "import contextlib, io\nfrom fabench import cli\n" \
           "with contextlib.redirect_stdout(io.StringIO()):\n" \
           "    assert cli.main(['model', 'list']) == 0\n" + REPORT
    assert _threads(code) == (1, "None")


def test_the_collector_pauses_while_loading_and_is_as_it_was_after() -> None:
    from fabench.util.startup import loading

    assert gc.isenabled()
    with loading():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with loading():
            pass
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()
