"""One pass of a matrix, however it was measured (one mpi.matrix job, or tcp pair jobs)."""

from dataclasses import dataclass

from ..records import PairRecord


@dataclass
class Pass:
    run_id: int
    mode: str
    role: str  # first (the matrix, or the part a resume added) or retest
    status: str
    reason: str | None
    pairs: list[PairRecord]
    hosts: list[str]
    wall_s: float
