"""`cdfbridge-consumer`: keep a ClickHouse table equal to each cdfbridge topic it reads."""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from consumer import logs
from consumer.commands import COMMANDS
from consumer.settings import ConsumerSettings, load
from services.cli import run_command
from services.settings import env_vars

EXIT_CODES = """\
exit codes:
  0  done, or stopped by SIGTERM/SIGINT after committing what it had written
  1  the table, the schema or the data need a fix, or Kafka refused a commit for good or
     reported a fatal error (the message says which)
  2  invalid settings or arguments, credentials Kafka, ClickHouse or the registry refused,
     or a TLS certificate that failed verification
  3  Kafka, the registry or ClickHouse did not answer
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cdfbridge-consumer",
        description="Consume cdfbridge topics, each into its own ClickHouse "
        "ReplacingMergeTree, committing offsets only after ClickHouse has the rows.",
        epilog="examples:\n  CDFBRIDGE_CLICKHOUSE__URL=http://127.0.0.1:8123 "
        "cdfbridge-consumer --topic cdfbridge.orders run\n"
        "  cdfbridge-consumer --config lake.toml run          # every [[tables]] entry's topic\n"
        "  cdfbridge-consumer --config lake.toml --topic cdfbridge.orders rebuild\n\n"
        f"{EXIT_CODES}\nsettings come from flags, a --config TOML file and env vars:\n  "
        + "\n  ".join(env_vars(ConsumerSettings)),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--topic",
        action="append",
        help="Kafka topic to consume; repeat for several; with [[tables]] or "
        "consumer.topic_pattern configured, picks among their topics",
    )
    p.add_argument("--group", help="consumer group (default cdfbridge-consumer)")
    p.add_argument(
        "--table", help="ClickHouse table, one topic only (default: topic without cdfbridge.)"
    )
    p.add_argument(
        "--config", type=Path, help="TOML file with [consumer], [kafka] ... and [[tables]]"
    )
    p.add_argument("--log-level", default="INFO")
    commands = p.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser("run", help="consume every topic until SIGTERM (the default)")
    run.add_argument(
        "--until-caught-up",
        action="store_true",
        help="exit once every partition of every topic is consumed to its end (backfills)",
    )
    ddl = commands.add_parser(
        "kafka-engine-ddl",
        help="print (or --apply) DDL for ClickHouse's Kafka engine to ingest each topic itself",
    )
    ddl.add_argument("--apply", action="store_true", help="run the DDL in ClickHouse")
    ddl.add_argument(
        "--watch",
        action="store_true",
        help="apply it again every consumer.kafka_engine_watch_seconds until SIGTERM, so schema "
        "changes and resyncs (with consumer.rebuild = auto) are followed without cron; serves "
        "/metrics and /health on consumer.metrics_port",
    )
    ddl.add_argument("--kafka-group", help="the Kafka engine's group (default <group>-clickhouse)")
    ddl.add_argument("--num-consumers", type=int, default=1, help="kafka_num_consumers")
    rebuild = commands.add_parser(
        "rebuild",
        help="refill the table from the topic (from its current generation, after a "
        "producer resync) into a shadow table, then swap it in atomically (one topic: --topic "
        "NAME when several are configured)",
    )
    rebuild.add_argument("--rebuild-group", help="group to use (default <group>-rebuild-<time>)")
    source = rebuild.add_mutually_exclusive_group()
    source.add_argument(
        "--from-lake",
        action="store_const",
        const="lake",
        dest="source",
        help="load the table's state from the Delta table with ClickHouse's own reader, then "
        "follow the topic (the default when the topic's history is gone)",
    )
    source.add_argument(
        "--from-topic",
        action="store_const",
        const="topic",
        dest="source",
        help="replay the topic only, refusing when retention deleted part of its history",
    )
    commands.add_parser(
        "bootstrap",
        help="a new subscriber (group without offsets): load its table from the Delta table "
        "with ClickHouse's own reader, then set the group to follow the topic from there",
    )
    reset = commands.add_parser(
        "reset-offsets",
        help="move the (stopped) group's offsets of one topic; it then re-reads from there",
    )
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument(
        "--to-datetime",
        type=datetime.fromisoformat,
        help="ISO time, e.g. 2026-01-02T03:04:05+00:00",
    )
    to.add_argument("--to-offset", type=int)
    reset.add_argument("--partition", type=int, action="append", help="repeatable; default all")
    commands.add_parser(
        "status",
        help="per topic: committed offset and lag per partition, last Delta version, row counts",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logs.configure(args.log_level)
    return run_command(
        "cdfbridge-consumer",
        lambda: load(args.config, topic_flags=args.topic, group=args.group, table=args.table),
        lambda settings: COMMANDS[args.command or "run"](settings, args),
    )
