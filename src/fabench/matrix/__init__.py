"""`fabench matrix`: the all-pairs matrix of a cluster (mpi.matrix), its verdicts (judge),
the switch groups it implies (topology) and where a job should run (advise)."""
