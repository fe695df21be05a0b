"""Parquet, batch by batch: reading, writing, and writing row groups on every core.

pyarrow is imported inside these modules' functions, only when a Parquet path runs.
"""

from cdc.formats.parquet.io import ParquetReader, ParquetWriter

__all__ = ["ParquetReader", "ParquetWriter"]
