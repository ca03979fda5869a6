"""`run()`: follow a Delta table, or each of [[tables]], and publish its changes until
stopped. One table is a lake of one (producer/lake/lake.py): each table is followed by
producer/lake/table.py; their reads at the head share one Spark job per cycle (producer/read/cycle.py).

SIGTERM or SIGINT aborts the open transactions and returns 0.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa

from producer import metrics
from producer.follow.probes import Probes
from producer.lake.lake import follow_all
from producer.lake.startup import Begun, discard, kafka_sides_in_thread
from producer.publish.publish import Transactions
from producer.read.cycle import Cycle
from producer.resync.resync import Resyncs
from producer.session import SessionStart
from producer.settings import ProducerSettings
from producer.steps import Waterfall, since_start_s
from services.jvm_names import jvm_class

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


def run(
    settings: ProducerSettings,
    spark: SparkSession | None = None,
    stop: threading.Event | None = None,
    starting: SessionStart | None = None,
) -> None:
    """Publish until --until-version is reached (every table's, with [[tables]]) or a signal
    arrives (or stop is set); raises CdfBridgeErrors. spark: a session to use instead of
    starting one from settings.spark; starting: that session's start, begun already."""
    stop = stop or threading.Event()
    restore = _on_signals(stop)
    _arrow_pool()
    resyncs: Resyncs | None = None
    cycle: Cycle | None = None
    probes: Probes | None = None
    transactions: Transactions | None = None
    try:
        metrics.serve(settings.source.metrics_port)
        kafka_config = settings.kafka.client_config()
        resyncs = Resyncs(kafka_config, stop)
        limit = settings.kafka.max_message_bytes
        tables = len(settings.tables) or 1
        transactions = Transactions(kafka_config, settings.transactional_id(), limit, tables)
        begun = _begin(settings, transactions)
        try:
            spark = spark or _started(settings, begun, starting)
        except BaseException:
            for table in begun.values():
                discard(table.kafka)
            raise
        cycle = Cycle(spark, settings.source.max_bytes_per_chunk)
        probes = Probes(jvm_class(spark, "org.apache.hadoop.fs.Path"))
        follow_all(settings, spark, resyncs, cycle, transactions, begun, probes)
    finally:
        if probes is not None:
            probes.close()
        if cycle is not None:
            cycle.close()
        if transactions is not None:
            transactions.close()
        if resyncs is not None:
            resyncs.close()
        restore()


def _arrow_pool() -> None:
    """The chunks' Arrow memory comes from the C library's allocator unless
    ARROW_DEFAULT_MEMORY_POOL names a pool. pyarrow's default, mimalloc, keeps what a thread
    freed for that thread: 200 idle tables' threads held 800 MiB (docs/performance.md)."""
    if POOL_VARIABLE not in os.environ:
        pa.set_memory_pool(pa.system_memory_pool())


def _begin(settings: ProducerSettings, transactions: Transactions) -> dict[str, Begun]:
    """Every table's start begun, by topic: the tables' Kafka sides set up together while
    Spark starts."""
    at = since_start_s()  # interpreter, imports, settings
    steps = {source.topic_name: Waterfall(source.topic_name) for source in settings.sources()}
    for waterfall in steps.values():
        waterfall.log("python", at)
    kafka = kafka_sides_in_thread(settings, steps, transactions)
    return {topic: Begun(steps[topic], kafka[topic]) for topic in steps}


def _started(
    settings: ProducerSettings, begun: dict[str, Begun], starting: SessionStart | None
) -> SparkSession:
    """The session (started now unless its start was begun); a lone table's start logs
    the step."""
    spark, seconds = (starting or SessionStart(settings)).result()
    if len(begun) == 1:
        next(iter(begun.values())).steps.log("spark_session", seconds)
    return spark


def _on_signals(stop: threading.Event) -> Callable[[], None]:
    """Make SIGTERM and SIGINT set stop; returns what puts the old handlers back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    signals = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in signals}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
