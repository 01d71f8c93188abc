"""Importers: peer tools' output (OSU, IMB, iperf3, sockperf) into the store, registered by
name like launchers, so old results compare with new ones."""

from .base import (
    ImportedRun,
    Importer,
    available_importers,
    get_importer,
    import_file,
    register_importer,
)

__all__ = ["ImportedRun", "Importer", "available_importers", "get_importer", "import_file",
           "register_importer"]
