"""`cdfbridge-producer`: follow a Delta table's Change Data Feed into Kafka."""

from __future__ import annotations

import argparse
import logging
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from producer.errors import FencedError
from producer.settings import ProducerSettings
from services.cli import run_command
from services.settings import env_vars
from services.tables import own_sections

EXIT_CODES = """\
exit codes:
  0  stopped by SIGTERM/SIGINT (open transaction aborted) or --until-version reached
  1  the table, its feed or its data need a fix, or Kafka refused a chunk or reported a
     fatal error (message says which)
  2  invalid settings or arguments, a topic name Kafka refuses, refused credentials, or a
     TLS certificate that failed verification
  3  Kafka, the registry or Spark did not answer after retries, or the Spark driver JVM died
  4  fenced: a newer copy of this producer started, or another producer took one of its
     tables over
  5  resync: asked for, but no producer published the snapshot within --wait
"""


NOT_SOURCE = {"config", "log_level", "master", "conf", "command", "name", "wait_s"}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cdfbridge-producer",
        description="Publish a Delta table's Change Data Feed to Kafka as Avro, exactly once.",
        epilog=f"{EXIT_CODES}\nsettings also come from a --config TOML file and from env vars:\n  "
        + "\n  ".join(env_vars(ProducerSettings)),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = p.add_argument_group("source")
    source.add_argument("--table", help="Delta table path/URI or catalog name")
    source.add_argument("--primary-key", help="key columns, comma-separated")
    source.add_argument("--topic", help="Kafka topic (default: cdfbridge.<table name>)")
    start = source.add_mutually_exclusive_group()
    start.add_argument("--starting-version", type=int, help="first version to publish")
    start.add_argument("--starting-timestamp", help="first commit at or after this ISO time")
    source.add_argument(
        "--snapshot",
        action="store_true",
        default=None,
        help="publish the table's state at --starting-version (default: latest) as "
        "_change_type=snapshot, then follow changes; for late-enabled CDF or vacuumed history",
    )
    source.add_argument("--until-version", type=int, help="stop after this version (backfills)")
    source.add_argument(
        "--poll-interval",
        dest="poll_interval_s",
        type=float,
        help="seconds between looks at the table after a new commit (default 0.5)",
    )
    source.add_argument(
        "--idle-poll-max",
        dest="idle_poll_max_s",
        type=float,
        help="seconds the looks at an idle table grow to, doubling (default 1)",
    )
    source.add_argument("--max-rows-per-chunk", type=int, help="rows per Kafka transaction")
    source.add_argument(
        "--max-bytes-per-chunk",
        type=int,
        help="encoded bytes a chunk may hold in memory (default 128 MiB); wide rows make "
        "chunks of fewer rows",
    )
    source.add_argument("--include-preimage", action="store_true", default=None)
    source.add_argument(
        "--tombstones",
        action="store_true",
        default=None,
        help="send a null value after each delete (compacted topics); it carries the delete",
    )
    source.add_argument(
        "--exclude-columns",
        metavar="COL[,COL]",
        help="columns never published (left out of the value schema and every message)",
    )
    source.add_argument(
        "--hash-columns",
        metavar="COL[,COL]",
        help="columns published as the lowercase hex SHA-256 of their value (string, binary or "
        "integer columns; NULL stays NULL): pseudonymised, not anonymised",
    )
    source.add_argument("--partitions", type=int, help="partitions of a topic this creates")
    source.add_argument("--metrics-port", type=int, help="Prometheus port (0: none)")
    spark = p.add_argument_group("spark")
    spark.add_argument("--master", help="Spark master (default local[*])")
    spark.add_argument(
        "--conf",
        action="append",
        metavar="KEY=VALUE",
        default=[],
        help="Spark/Hadoop setting, repeatable",
    )
    p.add_argument(
        "--config",
        type=Path,
        help="TOML file with [source], [kafka], [spark] ..., and [[tables]] to follow several "
        "tables in one process (each entry: table, primary_key, and any [source] key)",
    )
    p.add_argument("--log-level", default="INFO")
    commands = p.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("run", help="follow the table(s) until SIGTERM (the default)")
    resync = commands.add_parser(
        "resync",
        help="re-snapshot one table at its latest version into a new generation of its topic, "
        "while the running producer's other tables flow; then rebuild it with "
        "`cdfbridge-consumer rebuild`",
    )
    resync.add_argument(
        "name",
        nargs="?",
        help="the [[tables]] entry's table or topic (needed when --config lists several)",
    )
    resync.add_argument(
        "--wait",
        dest="wait_s",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="wait this long for the producer to publish the snapshot (default 600; 0: ask "
        "and return)",
    )
    return p


def settings_from(args: argparse.Namespace) -> ProducerSettings:
    """Flags over --config file over env vars over defaults."""
    values: dict[str, Any] = tomllib.loads(args.config.read_text()) if args.config else {}
    values = own_sections(values, ProducerSettings)
    source_flags = {k: v for k, v in vars(args).items() if v is not None and k not in NOT_SOURCE}
    values.setdefault("source", {}).update(source_flags)
    spark: dict[str, Any] = values.setdefault("spark", {})
    if args.master:
        spark["master"] = args.master
    if args.conf:
        spark.setdefault("conf", {}).update(dict(item.split("=", 1) for item in args.conf))
    if values["source"].get("metrics_port") == 0:
        values["source"]["metrics_port"] = None
    return ProducerSettings(**values)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(message)s")
    for chatty in ("py4j", "httpx2"):  # a line per Spark call and per registry request
        logging.getLogger(chatty).setLevel(max(logging.WARNING, logging.getLogger().level))
    for handler in logging.getLogger().handlers:
        handler.addFilter(_quiet_py4j_retries)
    command = _resync(args) if args.command == "resync" else _run
    return run_command(
        "cdfbridge-producer", lambda: settings_from(args), command, [(FencedError, 4)]
    )


def _quiet_py4j_retries(record: logging.LogRecord) -> bool:
    """py4j logs a failed call to the root logger with a traceback (INFO when it retries,
    ERROR when it gives up); the error raised after it says what happened."""
    return not (record.name == "root" and "py4j" in record.pathname)


def _run(settings: ProducerSettings) -> int:
    from producer.session import SessionStart, shorter_gil_turns

    shorter_gil_turns()
    starting = SessionStart(settings)  # the JVM boots while the rest is imported
    from producer.run import run

    run(settings, starting=starting)
    return 0


def _resync(args: argparse.Namespace) -> Callable[[ProducerSettings], int]:
    def resync(settings: ProducerSettings) -> int:
        from producer.resync import resync_command as resync

        topic = resync.chosen_topic(settings, args.name)
        position = resync.request(settings.kafka.client_config(), topic, args.wait_s)
        print(resync.describe(topic, position))
        taken = position.generation.number >= position.requested
        return 0 if taken or args.wait_s == 0 else 5

    return resync
