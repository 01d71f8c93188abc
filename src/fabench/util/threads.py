"""One BLAS thread for fabench's own process.

fabench's arithmetic is on small arrays. OpenBLAS (numpy's) starts a pool of threads when
numpy loads it, and they poll for work on the cores the kernels being timed need: `python -c
"import numpy"` took 0.27-0.31 s of user time here against 0.19-0.20 s with one thread, and
perf found the pool's polling in most fabench processes of the test suite (1.9 % of its CPU).
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager

BLAS_THREADS = "OPENBLAS_NUM_THREADS"


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Ask OpenBLAS for one thread while the code inside loads numpy, unless the user chose a
    count. OpenBLAS reads the variable once, when it loads; it is removed again afterwards, so
    the programs fabench starts (HPL sets its own) get the user's environment."""
    mine = BLAS_THREADS not in os.environ
    if mine:
        os.environ[BLAS_THREADS] = "1"
    try:
        yield
    finally:
        if mine:
            os.environ.pop(BLAS_THREADS, None)
