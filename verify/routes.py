"""Which reader copies a Delta snapshot, chosen from the table's protocol at that version.

delta-rs reads plain tables file by file as a pyarrow dataset, the fastest way. That reader
knows neither deletion vectors nor column mapping (it refuses the first and reads the second's
columns as NULLs), so such tables go through delta-rs's DataFusion scan, which applies both.
A reader feature neither has been checked with goes to Spark, which reads whatever the
producer reads. The choice looks at the protocol's reader version and features only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

import pyarrow as pa

Choice = Literal["auto", "delta-rs", "spark"]  # --reader


class Route(StrEnum):
    PYARROW = "delta-rs"
    DATAFUSION = "delta-rs (DataFusion)"
    SPARK = "Spark"


# Reader features each delta-rs reader is known here to read correctly.
PYARROW_FEATURES = frozenset({"timestampNtz"})
DATAFUSION_FEATURES = PYARROW_FEATURES | {"deletionVectors", "columnMapping"}
COLUMN_MAPPING_VERSION = 2  # reader version 2 means column mapping, without a feature list
FEATURES_VERSION = 3  # reader version 3 lists its reader features
VACUUMED = "if its history was vacuumed, compare a newer version with --version"


@dataclass(frozen=True)
class Snapshot:
    """What every reader returns: the table's columns, its schema and a scan of chosen ones."""

    route: Route
    names: list[str]  # the table's columns, as named at this version
    batches: Callable[[Sequence[str]], Iterator[pa.RecordBatch]]  # of these columns
    schema: dict[str, Any]  # as Delta stores it (Spark's StructType JSON)


def choose(min_reader_version: int, reader_features: Iterable[str] | None, forced: Choice) -> Route:
    """The route for a table with this protocol; `forced` is --reader."""
    if forced == "spark":
        return Route.SPARK
    features = frozenset(reader_features or ())
    if min_reader_version < COLUMN_MAPPING_VERSION or (
        min_reader_version == FEATURES_VERSION and features <= PYARROW_FEATURES
    ):
        return Route.PYARROW
    if forced == "delta-rs" or min_reader_version == COLUMN_MAPPING_VERSION:
        return Route.DATAFUSION
    if min_reader_version == FEATURES_VERSION and features <= DATAFUSION_FEATURES:
        return Route.DATAFUSION
    return Route.SPARK


def why(min_reader_version: int, reader_features: Iterable[str] | None, route: Route) -> str:
    """A short reason for the log line that names the route."""
    features = sorted(reader_features or ())
    listed = f"reader features {', '.join(features)}" if features else "no reader features"
    return f"reader version {min_reader_version}, {listed}: read with {route}"
