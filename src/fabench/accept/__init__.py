"""Cluster acceptance: a spec of checks with thresholds, verdicts with intervals
(docs/accept.md)."""
