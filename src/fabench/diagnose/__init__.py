"""Diagnoses: analyses that run measurements to answer one engineer's question each
(`fabench diagnose transports`: is the MPI/UCX library choosing its best path, per size?)."""
