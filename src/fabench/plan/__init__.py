"""The typed plan: a campaign spec (YAML) or command line parsed once into planned runs
(kernel, transport, sizes, ranks, kernel settings)."""
