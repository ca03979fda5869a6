"""Before a group reads a topic: make sure it misses nothing (consumer/group/history.py).

- A group with offsets whose history retention has deleted is refused: its table misses
  changes, and only a rebuild (from the lake) makes it whole again.
- A new group starts at the topic's current generation (schemas/progress.py), not in
  older generations' rows; when retention has deleted part of that generation, its table
  is bootstrapped from the lake first (consumer/rebuild/steps.py, by a group of its own) and it
  starts where that bootstrap left off.

- A group with offsets below what its table's rows reach (the table's mark, else its
  generation's start: consumer/tables/generation.py) jumps to them (`floor`): a rebuild killed
  before it moved the group, or offsets reset to an older generation, would otherwise
  write older rows into a table that holds newer ones.

The starts are handed to the member's assignment (consumer/group/rebalance.py), never committed
for the group by an admin call: other topics' members of the same group may be running.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from consumer.group import history
from consumer.rebuild.fill import create
from consumer.rebuild.steps import builder_group, rebuild
from consumer.settings import ConsumerSettings
from consumer.tables.generation import mark
from consumer.tables.placement import Placement
from schemas.progress import Generation
from services import offsets
from services.clickhouse_client import connect, existing_columns
from services.clickhouse_errors import sorted_errors
from services.progress_topic import Progress
from services.table_marks import marked

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Starts:
    first: dict[int, int] = field(default_factory=dict)  # for a partition without an offset
    floor: dict[int, int] = field(default_factory=dict)  # the lowest offset a partition reads


def starts(settings: ConsumerSettings) -> Starts:
    """Where each partition the group has no offset for starts, and below which none may."""
    kafka, topic, group = (
        settings.kafka.client_config(),
        settings.consumer.topic,
        settings.consumer.group,
    )
    if not offsets.exists(kafka, topic):
        return Starts()  # the member waits for the topic; a new topic holds its whole history
    generation = Progress(kafka, topic).read().generation
    found, missing = history.group_gaps(kafka, group, topic, generation)
    if missing and any(p.committed >= 0 for p in found):
        raise history.refusal(topic, f"group {group}", missing)
    if not missing:
        if generation.number and not any(p.committed >= 0 for p in found):
            _mark_new(settings, generation.number)
        return Starts(dict(generation.start), floor(settings, generation))
    log.warning(
        "the topic's history is gone: bootstrapping the new group's table from the lake",
        extra={"topic": topic, "group": group, "gaps": ", ".join(map(str, missing))},
    )
    done = rebuild(settings, builder_group(group, "bootstrap"), "lake", move_live=False)
    return Starts(offsets.committed(kafka, done.group, topic))


def floor(settings: ConsumerSettings, generation: Generation) -> dict[int, int]:
    """Per partition, the offset the table's rows reach when the table holds the topic's
    current generation: its mark's, else the generation's start; none when it holds an
    older one (it is due a rebuild, which status and `rebuild = "auto"` see to)."""
    with sorted_errors(settings.clickhouse.url):
        found = marked(connect(settings.clickhouse), settings.target())
    if found.generation != generation.number:
        return {}
    reached = {**generation.start}
    for partition, offset in found.start.items():
        reached[partition] = max(offset, reached.get(partition, 0))
    return reached


def _mark_new(settings: ConsumerSettings, generation: int) -> None:
    """A table made for a new group holds the generation it starts at
    (consumer/tables/generation.py)."""
    target = settings.target()
    with sorted_errors(settings.clickhouse.url):
        client = connect(settings.clickhouse)
        if existing_columns(client, target) is None:
            create(settings, target)
            mark(Placement.of(settings.clickhouse, client), target, generation)
