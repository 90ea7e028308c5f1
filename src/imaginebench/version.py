"""The package version, in the base layer: records, caches and checkpoints stamp it without
importing the package's public surface (``imaginebench/__init__`` imports nearly everything)."""

__version__ = "0.1.0"
