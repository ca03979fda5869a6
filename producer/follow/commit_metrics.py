"""Each commit's operation metrics from its own commit file (Delta's DeltaHistoryManager on
the log's files), without the Spark job history(n) runs (producer/read/source.py
row_estimates)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from producer.follow.log_state import LogFiles
from services.jvm_names import jvm_class

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_DELTA = "org.apache.spark.sql.delta"


def commit_metrics(
    spark: SparkSession, files: LogFiles, first: int, last: int
) -> dict[int, dict[str, str] | None] | None:
    """Each commit's operation metrics, first..last (None: a commit without any); None
    when this Delta has no such internal API or a commit file cannot be read."""
    from py4j.protocol import Py4JError

    try:
        manager = jvm_class(spark, f"{_DELTA}.DeltaHistoryManager")
        names = jvm_class(spark, f"{_DELTA}.util.FileNames")
        found = {}
        for version in range(first, last + 1):
            path = names.unsafeDeltaFile(files.log_dir, version)
            info = manager.getCommitInfoOpt(files.store, path, files.conf)
            # The commit info as its JSON action: one py4j call, not one per metric.
            action = json.loads(info.get().json())["commitInfo"] if info.isDefined() else {}
            found[version] = action.get("operationMetrics") or None
    except Py4JError:  # Delta's error too (a commit file cleaned up): the history says
        return None
    return found
