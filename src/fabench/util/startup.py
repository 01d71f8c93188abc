"""What fabench does while it imports the code of the command that runs (numpy, pydantic, the
command's modules: about half a second of CPU in every fabench process).

- One BLAS thread. fabench's arithmetic is on small arrays; OpenBLAS (numpy's) starts a pool
  of threads when numpy loads it, and they poll for work on the cores the kernels being timed
  need: `python -c "import numpy"` took 0.27-0.31 s of user time here against 0.19-0.20 s
  with one thread, and perf found the pool's polling in most fabench processes of the test
  suite (1.9 % of its CPU samples).
- No cyclic garbage collection: an import creates objects that all live on, and each
  collection while they are made walks every one made before (perf: 6 % of the suite's CPU
  samples in the collector, most in short fabench processes). Importing `bench` and `report`
  took 0.43-0.69 s of user time without it, 0.52-0.88 s with it (six runs each, here).
"""

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager

BLAS_THREADS = "OPENBLAS_NUM_THREADS"


@contextmanager
def loading() -> Iterator[None]:
    """Around importing a command's code. OpenBLAS reads its thread count once, when it
    loads: one thread unless the user chose a count, and the variable is removed again
    afterwards, so the programs fabench starts (HPL sets its own) get the user's
    environment. The collector is as it was afterwards."""
    mine = BLAS_THREADS not in os.environ
    collecting = gc.isenabled()
    if mine:
        os.environ[BLAS_THREADS] = "1"
    gc.disable()
    try:
        yield
    finally:
        if mine:
            os.environ.pop(BLAS_THREADS, None)
        if collecting:
            gc.enable()
