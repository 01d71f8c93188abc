"""fabench: measure, compare, tune, diagnose and predict HPC cluster interconnects."""

__version__ = "0.1.0"
