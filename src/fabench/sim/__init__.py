"""SimGrid SMPI: generated platforms and the smpirun driver (docs/model.md)."""
