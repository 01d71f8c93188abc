"""Tune: audit a host against a profile, apply it with an exact revert, prove it by A/B."""
