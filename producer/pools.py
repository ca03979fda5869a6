"""Spark's FAIR scheduler pools, for several tables in one session (producer/lake/lake.py).

Reads far behind a table's head (backfills, snapshots: producer/read/chunks.py) run in HISTORY,
the heads' fresh commits in FOLLOW, in the cycle's one job (producer/read/cycle.py): the two
pools share the cores while both have tasks, so a backfill never holds back fresh commits.
(Spark breaks ties between pools by name: FOLLOW sorts first.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FOLLOW, HISTORY = "follow", "history"


def in_pool(spark: SparkSession, pool: str) -> None:
    """Run this thread's Spark jobs in the FAIR scheduler pool `pool`; without FAIR
    scheduling (one table per process) Spark ignores it."""
    spark.sparkContext.setLocalProperty("spark.scheduler.pool", pool)
