"""`status`: where the group stands per partition, the last Delta version in the table,
its row counts, and whether a resync (a new generation of the topic) calls for a rebuild.
A partition's lag is 0 once a read_committed reader has nothing left after the group's
offset, even though commit markers follow it (services/offsets.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from clickhouse_connect.driver.client import Client

from consumer.group import history
from consumer.group.registry import Schemas
from consumer.rebuild.steps import SHADOW_SUFFIX
from consumer.settings import ConsumerSettings
from schemas.changes import COMMIT_VERSION
from schemas.clickhouse import quote
from schemas.progress import Generation
from schemas.target import Target
from services import offsets
from services.clickhouse_client import connect, existing_columns
from services.clickhouse_errors import sorted_errors
from services.group_positions import PartitionOffsets
from services.progress_topic import Progress
from services.table_marks import built_from, held


@dataclass(frozen=True)
class Status:
    group: str
    topic: str
    partitions: list[PartitionOffsets]
    table: str
    rows: int | None  # every row version stored; None when the table does not exist
    current_rows: int | None  # rows of <table>_current: the Delta table's row count
    last_version: int | None  # highest _commit_version in the table
    generation: Generation = field(default_factory=Generation)  # the topic's
    held: int = 0  # the generation the table holds
    # The value schema the table's Kafka-engine objects were made from (0: unknown; None:
    # none exist), and the topic's latest.
    engine_schema: int | None = None
    latest_schema: int | None = None
    retention: str | None = None  # what deletes the topic's history (consumer/group/history.py)
    # Shadow tables of rebuilds of this table (consumer/rebuild/steps.py): a running rebuild's,
    # or left by one killed before it dropped its shadow.
    shadows: tuple[str, ...] = ()

    @property
    def lag(self) -> int:
        return sum(p.lag for p in self.partitions)

    def lines(self) -> list[str]:
        out = [f"group {self.group} on topic {self.topic}: total lag {self.lag}"]
        out += [
            f"  partition {p.partition}: committed {_offset(p.committed)}, end {p.high}, "
            f"lag {p.lag}"
            for p in self.partitions
        ]
        if self.rows is None:
            out.append(f"table {self.table}: does not exist")
        else:
            out.append(
                f"table {self.table}: {self.rows} rows stored, {self.current_rows} current, "
                f"last Delta version {self.last_version}"
            )
        if self.generation.number:
            start = ", ".join(f"{p}: {o}" for p, o in sorted(self.generation.start.items()))
            out.append(f"topic generation {self.generation.number} (starts at {start})")
        if self.engine_schema is not None and self.engine_schema != self.latest_schema:
            made = f"schema {self.engine_schema}" if self.engine_schema else "an older schema"
            out.append(
                f"Kafka-engine tables of {self.table} are behind the topic's schema: made from "
                f"{made}, the latest is {self.latest_schema}; bring them up to date "
                f"(cdfbridge-consumer --topic {self.topic} kafka-engine-ddl --apply)"
            )
        gaps = history.gaps(self.partitions, self.generation)
        if gaps:
            out.append(
                f"history gone: {'; '.join(map(str, gaps))}; a replay of topic {self.topic} "
                f"would be incomplete: {history.BOOTSTRAP_HINT}"
            )
        if self.retention:
            out.append(f"warning: topic {self.topic}: {self.retention}")
        if self.shadows:
            out.append(
                f"rebuild tables of {self.table}: {', '.join(self.shadows)}; one that no "
                "running rebuild uses was left by a rebuild that stopped: drop it and its "
                "_current view"
            )
        if self.rows is not None and self.held < self.generation.number:
            out.append(
                f"table {self.table} holds generation {self.held}, from before a resync: "
                f"rebuild it (cdfbridge-consumer --topic {self.topic} rebuild)"
            )
        return out


def status(settings: ConsumerSettings) -> Status:
    c = settings.consumer
    found = offsets.positions(settings.kafka.client_config(), c.group, c.topic)
    target = settings.target()
    client = connect(settings.clickhouse)
    rows = current = version = None
    position = Progress(settings.kafka.client_config(), c.topic).read()
    generation = position.generation
    table_holds, latest = 0, None
    with sorted_errors(settings.clickhouse.url):
        if existing_columns(client, target) is not None:
            rows, version = _counts(client, target)
            current = int(str(client.command(f"SELECT count() FROM {target.current_view}")))  # noqa: S608
            table_holds = held(client, target)
        built = built_from(client, target)
        shadows = _shadows(client, target)
    engine = None if built is None else built.schema_id
    if engine is not None:
        schemas = Schemas(settings.schema_registry.client_config())
        latest = schemas.topic_value(c.topic, position.value_schema)[0]
    return Status(
        c.group,
        c.topic,
        found,
        target.name,
        rows,
        current,
        version,
        generation,
        table_holds,
        engine,
        latest,
        history.retention(settings.kafka.client_config(), c.topic),
        shadows,
    )


def _shadows(client: Client, target: Target) -> tuple[str, ...]:
    query = (
        "SELECT name FROM system.tables WHERE database = {db:String} "
        "AND startsWith(name, {prefix:String}) AND engine != 'View' ORDER BY name"
    )
    prefix = target.table + SHADOW_SUFFIX
    found = client.query(query, parameters={"db": target.database, "prefix": prefix})
    return tuple(f"{quote(target.database)}.{quote(name)}" for (name,) in found.result_rows)


def _counts(client: Client, target: Target) -> tuple[int, int | None]:
    query = f"SELECT count(), max({quote(COMMIT_VERSION)}) FROM {target.name}"  # noqa: S608
    [(rows, version)] = client.query(query).result_rows
    return int(rows), (int(version) if rows else None)


def _offset(committed: int) -> str:
    return str(committed) if committed >= 0 else "none"
