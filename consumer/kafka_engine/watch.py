"""`kafka-engine-ddl --watch`: ClickHouse's Kafka engine kept up with its topics without
cron. No cdfbridge process reads the rows of a Kafka-engine table, so a schema change or a
resync is met where the DDL is applied (consumer/kafka_engine/plan.py `apply`: new columns
brought in, a table behind a new generation rebuilt with `rebuild = "auto"`). The watch
applies every configured topic's DDL in turn, every `kafka_engine_watch_seconds`, until
SIGTERM:
1. plan each topic's DDL from the registry's latest schemas;
2. apply it: what is in place and current is left alone, what is missing or older is made;
3. a topic whose apply fails, for whatever reason, is logged, reported by /health and
   tried again next round; the others go on. Finding the topics of a pattern is retried
   the same way (a Kafka outage is waited out, with the topics found before); only a
   pattern that matches nothing at the start ends the watch (a settings error);
4. the messages the engine could not parse (`<table>_kafka_errors`) are counted: rows there
   are rows missing from the table, so /health reports them until someone deals with them
   (a rebuild, then TRUNCATE of the errors table); and the table's newest commit time is
   read, for the age of its newest row (consumer/freshness.py).

Its port (consumer.metrics_port) serves /metrics (each topic's last applied round,
failures, unparsed messages and newest row's age) and /health (503 while a topic's last
apply failed or its errors table holds messages).
"""

from __future__ import annotations

import logging
import signal
import threading
import time

from prometheus_client import CollectorRegistry, Counter, Gauge

from consumer.freshness import NewestRowAge
from consumer.kafka_engine import plan as kafka_engine_plan
from consumer.kafka_engine.ddl import errors
from consumer.settings import ConsumerSettings
from consumer.topics import resolve
from schemas.changes import COMMIT_TIMESTAMP
from schemas.clickhouse import quote
from schemas.errors import CdfBridgeError, ConfigError
from services.clickhouse_client import connect
from services.clickhouse_errors import sorted_errors
from services.health import serve

log = logging.getLogger(__name__)
PREFIX = "cdfbridge_consumer_kafka_engine_"
TOPICS = "(topics)"  # what /health and the failure counter name a failed look for topics


class EngineWatch:
    """Applies the Kafka-engine DDL of every topic of `settings` each round."""

    def __init__(self, settings: ConsumerSettings, group: str, num_consumers: int) -> None:
        self.settings, self.group, self.num_consumers = settings, group, num_consumers
        self.stop = threading.Event()
        self.failures: dict[str, str] = {}  # topic → why its last apply failed
        self.done: set[str] = set()  # topics applied at least once
        self.registry = r = CollectorRegistry()
        topic = ["topic"]
        self.applied = Gauge(
            f"{PREFIX}applied_timestamp_seconds",
            "When the topic's DDL was last applied",
            topic,
            registry=r,
        )
        self.failed = Counter(
            f"{PREFIX}apply_failures", "Applies of the topic's DDL that failed", topic, registry=r
        )
        self.unparsed = Gauge(
            f"{PREFIX}unparsed_messages",
            "Messages the engine could not parse, in <table>_kafka_errors",
            topic,
            registry=r,
        )
        self.unparsed_by_topic: dict[str, int] = {}
        self.newest_row = NewestRowAge(r)
        self.topics: list[ConsumerSettings] = []  # the last topics found
        self.nullable_tuple: bool | None = None  # ClickHouse's, asked in the first apply

    def problems(self) -> list[str]:
        failed = [f"topic {topic}: {why}" for topic, why in sorted(self.failures.items())]
        unparsed = [
            f"topic {topic}: {count} messages in its Kafka engine's errors table"
            for topic, count in sorted(self.unparsed_by_topic.items())
            if count
        ]
        return failed + unparsed

    def run(self) -> None:
        """Rounds until stop is set; each topic's failure is its own (step 3)."""
        while not self.stop.is_set():
            for each in self._resolved():
                if self.stop.is_set():
                    return
                self._apply(each)
            self.stop.wait(self.settings.consumer.kafka_engine_watch_seconds)

    def _resolved(self) -> list[ConsumerSettings]:
        """The topics to apply this round: found again, else (3.) the last ones found."""
        try:
            self.topics = resolve(self.settings)
        except ConfigError as exc:
            if not self.topics:  # the first look: the settings are wrong
                raise
            self._failure(TOPICS, "the topics were not found", exc)
        except Exception as exc:  # noqa: BLE001 - a Kafka outage (3.): waited out
            self._failure(TOPICS, "the topics were not found", exc)
        else:
            self._forget(TOPICS)
        return self.topics

    def _apply(self, each: ConsumerSettings) -> None:
        topic = each.consumer.topic
        try:
            if self.nullable_tuple is None:
                self.nullable_tuple = kafka_engine_plan.nullable_tuples(self.settings)
            nullable_tuple = self.nullable_tuple
            chosen = kafka_engine_plan.plan(each, self.group, self.num_consumers, nullable_tuple)
            kafka_engine_plan.apply(each, chosen)  # 1., 2.
            count, newest = table_state(each)  # 4.
        except Exception as exc:  # noqa: BLE001 - any topic's failure is its own (3.)
            self._failure(topic, "the Kafka engine's DDL was not applied", exc)
            return
        if self._forget(topic) or topic not in self.done:
            log.info("the Kafka engine's DDL is applied", extra={"topic": topic})
        self.done.add(topic)
        self.applied.labels(topic).set(time.time())
        self.unparsed_by_topic[topic] = count
        self.unparsed.labels(topic).set(count)
        if newest is not None:
            self.newest_row.saw(topic, newest)

    def _failure(self, topic: str, what: str, exc: Exception) -> None:
        """Record exc as topic's failure: logged (with its traceback when it is not one of
        ours), counted, and named by /health."""
        ours = isinstance(exc, CdfBridgeError)
        why = (str(exc) if ours else f"{type(exc).__name__}: {exc}")[:500]
        self.failures[topic] = why
        self.failed.labels(topic).inc()
        log.error(what, extra={"topic": topic, "error": why}, exc_info=None if ours else exc)

    def _forget(self, topic: str) -> bool:
        """topic's failure is over; whether it had one."""
        return self.failures.pop(topic, None) is not None


def table_state(settings: ConsumerSettings) -> tuple[int, float | None]:
    """Rows in the target's `<table>_kafka_errors`, and the commit time (epoch s) of the
    target's newest row (None while it has none)."""
    target = settings.target()
    newest = f"toUnixTimestamp64Micro(max({quote(COMMIT_TIMESTAMP)}))"
    with sorted_errors(settings.clickhouse.url):
        client = connect(settings.clickhouse)
        count = int(str(client.command(f"SELECT count() FROM {errors(target).name}")))  # noqa: S608 - quoted
        micros = int(str(client.command(f"SELECT {newest} FROM {target.name}")))  # noqa: S608
    return count, micros / 1e6 if micros > 0 else None


def watch(settings: ConsumerSettings, group: str, num_consumers: int) -> None:
    """Run the watch until SIGTERM or SIGINT, serving its /metrics and /health."""
    engine = EngineWatch(settings, group, num_consumers)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: engine.stop.set())
    port = settings.consumer.metrics_port
    server = serve(engine, port) if port else None
    log.info(
        "watching the Kafka engine's DDL",
        extra={"every_s": settings.consumer.kafka_engine_watch_seconds},
    )
    try:
        engine.run()
    finally:
        if server is not None:
            server.shutdown()
