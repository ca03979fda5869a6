"""`cdfbridge-demo-data`: a CDF-enabled Delta table that keeps changing, for demos and tests.

Written with delta-rs (the `deltalake` package), so it needs no JVM and keeps up with one
commit per second. Commits cycle through insert, update, merge (upsert) and delete. A table on
S3 (s3:// or s3a://) is reached with the [storage] settings (CDFBRIDGE_STORAGE__*).
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from pydantic import ValidationError

from services.settings import describe
from services.storage import StorageOnly

if TYPE_CHECKING:
    from deltalake import DeltaTable

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("age", pa.int64()),
        ("created_at", pa.timestamp("us", tz="UTC")),
    ]
)
OPERATIONS = ("insert", "update", "merge", "delete")
NAMES = ("ann", "bob", "cy", "dee", "eve", "fay", "gus", "hal")


class Generator:
    """Commits batches of changes to the table at path; ids are decimal strings."""

    def __init__(
        self,
        path: str,
        seed: int = 0,
        storage_options: Mapping[str, str] | None = None,
        checkpoint_interval: int | None = None,
    ) -> None:
        """checkpoint_interval: commits between checkpoints of a new table (Spark writes one
        every 10; None: delta-rs's default, every 100)."""
        from deltalake import DeltaTable, write_deltalake

        self.path, self.random = path, random.Random(seed)  # noqa: S311 - demo data
        self.options = dict(storage_options or {}) or None
        if not DeltaTable.is_deltatable(path, storage_options=self.options):
            empty = SCHEMA.empty_table()
            config = {"delta.enableChangeDataFeed": "true"}
            if checkpoint_interval is not None:
                config["delta.checkpointInterval"] = str(checkpoint_interval)
            write_deltalake(
                path, empty, mode="append", configuration=config, storage_options=self.options
            )
        ids = self._table().to_pyarrow_table(columns=["id"]).column("id").to_pylist()
        self.live = {int(i) for i in ids}
        self.next_id = max(self.live, default=-1) + 1

    def commit(self, operation: str, rows: int) -> int:
        """One Delta commit of about rows changes; returns the table's new version."""
        from deltalake import write_deltalake

        if operation == "insert" or len(self.live) < rows:
            write_deltalake(self.path, self._new(rows), mode="append", storage_options=self.options)
        else:
            merge = self._table().merge(
                self._source(operation, rows),
                predicate="t.id = s.id",
                source_alias="s",
                target_alias="t",
            )
            if operation == "delete":
                merge = merge.when_matched_delete()
            else:
                merge = merge.when_matched_update_all().when_not_matched_insert_all()
            merge.execute()
        return int(self._table().version())

    def _table(self) -> DeltaTable:
        from deltalake import DeltaTable

        return DeltaTable(self.path, storage_options=self.options)

    def _source(self, operation: str, rows: int) -> pa.Table:
        existing = self.random.sample(
            sorted(self.live), rows if operation != "merge" else rows // 2
        )
        if operation == "delete":
            self.live.difference_update(existing)
            return pa.table({"id": [str(i) for i in existing]})
        table = self._rows(existing)
        return (
            pa.concat_tables([table, self._new(rows - len(existing))])
            if operation == "merge"
            else table
        )

    def _new(self, rows: int) -> pa.Table:
        ids = list(range(self.next_id, self.next_id + rows))
        self.next_id += rows
        self.live.update(ids)
        return self._rows(ids)

    def _rows(self, ids: Sequence[int]) -> pa.Table:
        now = dt.datetime.now(dt.UTC)
        return pa.table(
            {
                "id": [str(i) for i in ids],
                "name": [self.random.choice(NAMES) for _ in ids],
                "age": [self.random.randrange(18, 90) for _ in ids],
                "created_at": [now] * len(ids),
            },
            schema=SCHEMA,
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="cdfbridge-demo-data",
        description="Create CDF-enabled Delta tables (id, name, age, created_at) and keep "
        "committing inserts, updates, merges and deletes to them.",
    )
    p.add_argument(
        "--table",
        required=True,
        action="append",
        help="table path or s3a:// URI (created when missing); repeat for several tables, "
        "each committed to in turn every interval",
    )
    p.add_argument("--rows-per-commit", type=int, default=20_000)
    p.add_argument("--interval", type=float, default=1.0, help="seconds between commits")
    p.add_argument("--commits", type=int, default=0, help="stop after this many (0: never)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--checkpoint-interval",
        type=int,
        help="commits between checkpoints of a new table (Spark writes one every 10; default "
        "delta-rs's 100)",
    )
    args = p.parse_args(argv)
    if args.rows_per_commit <= 0 or args.interval < 0 or args.commits < 0:
        p.error("--rows-per-commit must be positive, --interval and --commits not negative")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        options = StorageOnly().storage.delta_rs_options()
    except ValidationError as exc:
        print(f"cdfbridge-demo-data: invalid settings:\n{describe(exc)}", file=sys.stderr)
        return 2
    generators = {
        table: Generator(table, args.seed + i, options, args.checkpoint_interval)
        for i, table in enumerate(args.table)
    }
    done = 0
    while not stop.is_set() and (args.commits == 0 or done < args.commits):
        began = time.monotonic()
        operation = OPERATIONS[done % len(OPERATIONS)]
        for table, generator in generators.items():
            version = generator.commit(operation, args.rows_per_commit)
            named = f"{table} " if len(generators) > 1 else ""
            print(
                f"{named}version {version}: {operation} of {args.rows_per_commit} rows", flush=True
            )
        done += 1
        stop.wait(max(0.0, args.interval - (time.monotonic() - began)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
