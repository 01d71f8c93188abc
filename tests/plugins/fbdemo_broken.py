"""A plugin with a mistake in it: fabench must name it, not skip it."""

from fabench.kernels import no_such_name  # noqa: F401
