"""cdc: the changelog file converter."""

__version__ = "0.1.0"
