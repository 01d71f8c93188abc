"""Predict: calibrate a fabric model from measured curves, predict collectives and HPL at
scale (see docs/model.md)."""
