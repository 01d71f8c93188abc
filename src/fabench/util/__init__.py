"""Helpers with no fabench domain: text files, tables, units, YAML, progress, signals,
host-name checks, the plugin registry, statistics."""
