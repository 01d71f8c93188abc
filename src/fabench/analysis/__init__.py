"""What is read back from a store: series selection, comparisons, history, analyses."""
