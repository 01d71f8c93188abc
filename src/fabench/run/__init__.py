"""Running planned runs: the runner (start each run, collect its records, store them, resume a
cut-short campaign) and adaptive repetition."""
