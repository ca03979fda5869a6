"""`rebuild = "auto"`: a table rebuilt by itself when its topic starts a new generation.

A producer resync (asked for by hand, or by `on_incompatible_change = "resync"`) starts a
new generation of the topic: a snapshot, from which the table must be rebuilt to leave the
older rows behind. With the setting, each topic's pipeline is watched by the process's one
look-out (consumer/rebuild/generations.py): once the topic's generation is newer than the
one its table holds, or the new generation's schema stops the pipeline, the pipeline
drains and stops, the table is rebuilt by a group of its own (from the lake where
ClickHouse reads the table, else from the topic: consumer/rebuild/steps.py), and the
pipeline starts again where that group ended. The other topics' pipelines keep flowing
meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from consumer.group.loop import Pipeline
from consumer.rebuild.first_read import starts
from consumer.rebuild.generations import Generations
from consumer.rebuild.steps import builder_group, rebuild
from consumer.settings import ConsumerSettings
from schemas.target import SchemaMismatchError
from services import offsets
from services.clickhouse_client import connect
from services.clickhouse_errors import sorted_errors
from services.lake import LakeUnreadableError
from services.progress_topic import Progress
from services.retry import Stopped, retrying
from services.table_marks import held

log = logging.getLogger(__name__)


def behind(settings: ConsumerSettings) -> bool:
    """Whether the topic's generation is newer than the one the table holds."""
    kafka, c = settings.kafka.client_config(), settings.consumer
    topic_generation = Progress(kafka, c.topic).read().generation.number
    if not topic_generation:
        return False
    with sorted_errors(settings.clickhouse.url):
        holds = held(connect(settings.clickhouse), settings.target())
    return holds < topic_generation


def rebuilt(settings: ConsumerSettings, group: str) -> dict[int, int]:
    """Rebuild the table with `group` (new), from the lake where ClickHouse reads the Delta
    table, else from the topic; returns where `group` ended, by partition."""
    topic = settings.consumer.topic
    log.warning("the topic has a new generation: rebuilding the table", extra={"topic": topic})
    try:
        rebuild(settings, group, "lake", move_live=False)
    except LakeUnreadableError as exc:
        log.warning("rebuilding from the topic", extra={"topic": topic, "why": str(exc)[:300]})
        rebuild(settings, group, "topic", move_live=False)
    return offsets.committed(settings.kafka.client_config(), group, topic)


def serve(
    pipeline: Pipeline,
    renew: Callable[[Pipeline], Pipeline],
    generations: Generations | None = None,
) -> None:
    """Run the pipeline from where its group starts (consumer/rebuild/first_read.py); with
    `generations` (`rebuild = "auto"`), rebuild its table at each new generation and run a
    new one (made by `renew`) from where the rebuild ended."""
    moved: dict[int, int] = {}
    while not pipeline.stopping.is_set():
        c = pipeline.settings.consumer
        wait = retrying("Kafka", max_backoff_s=c.max_backoff_seconds, stop=pipeline.stopping)
        try:
            found = wait(starts, pipeline.settings)
        except Stopped:
            return
        pipeline.rebalance.first, pipeline.rebalance.floor = found.first, found.floor
        pipeline.rebalance.moved = moved
        watched = generations.watch(pipeline) if generations is not None else None
        try:
            pipeline.run()
        except SchemaMismatchError:  # the new generation's schema, met before the watch saw it
            if watched is None or not behind(pipeline.settings):
                raise
            watched.moved = True
        finally:
            if generations is not None and watched is not None:
                generations.forget(watched)
        if watched is None or not watched.moved:
            return
        # Renewed before the rebuild: a stop from now on reaches the pipeline that follows
        # (one that came already stops it at once, and the next start rebuilds instead).
        pipeline = renew(pipeline)
        if pipeline.stopping.is_set():
            return
        moved = _rebuilt_once(pipeline.settings, c.group)


def _rebuilt_once(settings: ConsumerSettings, live: str) -> dict[int, int]:
    """rebuilt(), unless another process of the group has rebuilt the table already: its
    mark then says where its rows reach, and the pipeline starts there (`floor` in
    consumer/rebuild/first_read.py)."""
    if not behind(settings):
        topic = settings.consumer.topic
        log.info("the table holds the topic's generation already", extra={"topic": topic})
        return {}
    return rebuilt(settings, builder_group(live, "rebuild"))
