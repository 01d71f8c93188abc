"""Importers: peer tools' output (OSU, IMB, iperf3, sockperf) into the store, registered by
name like every plugin kind (fabench.util.registry), so old results compare with new ones."""

from .base import (
    IMPORTERS,
    ImportedRun,
    Importer,
    aggregate,
    available_importers,
    get_importer,
    import_file,
    register_importer,
)

__all__ = ["IMPORTERS", "ImportedRun", "Importer", "aggregate", "available_importers",
           "get_importer", "import_file", "register_importer"]
