"""Insert one write unit into ClickHouse (consumer/group/units.py): the raw Confluent-framed
values concatenated, `FORMAT AvroConfluent`, decoded by ClickHouse through the registry.

ClickHouse errors are sorted where they enter our code, on their class and server error
code (services/clickhouse_errors.py): unreachable or overloaded → ClickHouseUnavailableError
(retry), bad data → BadDataError (isolate), refused credentials → ConfigError, else
InsertError.
"""

from __future__ import annotations

from collections.abc import Sequence

from clickhouse_connect.driver.client import Client
from pydantic import SecretStr

from schemas.clickhouse import InputColumn, literal, quote
from schemas.target import Target
from services.clickhouse_client import insert_settings
from services.clickhouse_errors import sorted_errors


class Sink:
    def __init__(
        self, client: Client, target: Target, registry_url: SecretStr, topic_id: str
    ) -> None:
        self.client = client
        self.target = target
        self.registry_url = registry_url
        # Before every dedup token: a topic created again under the same name starts its
        # offsets at 0 again, and its batches must not pass for the old topic's repeats.
        self.topic_id = topic_id

    def insert(self, values: Sequence[bytes], columns: Sequence[InputColumn], token: str) -> None:
        """One insert, one block: `values` are whole Confluent-framed Avro messages, read by
        their Avro names and written to the columns of their Delta names. token names the
        messages within the topic; the topic's id is put before it."""
        settings = {
            # ClickHouse masks the password in it in its logs.
            "format_avro_schema_registry_url": self.registry_url.get_secret_value(),
            # Older schemas lack columns added later; those read as their default.
            "input_format_avro_allow_missing_fields": 1,
            "insert_deduplicate": 1,
            "insert_deduplication_token": f"{self.topic_id}:{token}",
            # Versions of a key are folded by merges and FINAL reads anyway; folding them in
            # every insert too costs about a third of its time.
            "optimize_on_insert": 0,
            # On a cluster, through the Distributed table: each row to its key's shard.
            **insert_settings(self.target),
        }
        with sorted_errors():
            self.client.command(
                insert_sql(self.target, columns), data=b"".join(values), settings=settings
            )


def insert_sql(target: Target, columns: Sequence[InputColumn]) -> str:
    """`INSERT INTO t (<Delta names>) SELECT <casts> FROM input('<Avro names and types>')`."""
    names = ", ".join(quote(c.name) for c in columns)
    structure = ", ".join(f"{quote(c.avro_name)} {c.input_type}" for c in columns)
    selected = ", ".join(c.expression for c in columns)
    return (
        f"INSERT INTO {target.name} ({names}) SELECT {selected} "  # noqa: S608 - quoted names
        f"FROM input({literal(structure)}) FORMAT AvroConfluent"
    )
