"""HPL across nodes: per-node consistency runs and scaling runs over a scheduler."""
