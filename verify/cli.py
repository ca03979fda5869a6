"""`cdfbridge-verify`: is ClickHouse's `<table>_current` equal to the Delta table?"""

from __future__ import annotations

import argparse
import json
import logging
import tomllib
from pathlib import Path
from typing import Any

from services.cli import run_command
from services.settings import env_vars
from services.tables import own_sections
from verify.settings import VerifySettings

EXIT_CODES = """\
exit codes:
  0  equal (every table, with [[tables]]); with --watch, stopped by SIGTERM or SIGINT
  1  not equal (the report names lost, extra and wrong keys), nothing to compare yet, or the
     Delta table cannot be read (the message says why)
  2  invalid settings or arguments, credentials Kafka or ClickHouse refused, a TLS
     certificate that failed verification, or a Spark reader without the Delta jars
  3  Kafka, ClickHouse or the Spark reader's master did not answer
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cdfbridge-verify",
        description="Compare ClickHouse's <table>_current with the Delta table's snapshot at the "
        "last version the producer published: row counts and an order-independent hash over "
        "every column; on a mismatch, the lost, extra and wrong keys with a sample per column. "
        "With --as-of, --repair or --watch: inside ClickHouse, as of the version the consumer "
        "group has consumed, while the pipeline runs.",
        epilog="examples:\n  cdfbridge-verify --table /data/people --wait 60\n"
        "  cdfbridge-verify --config lake.toml --watch --interval 60 --metrics-port 9466\n"
        "  cdfbridge-verify --config lake.toml --table /data/people --repair\n\n"
        f"{EXIT_CODES}\nsettings also come from a --config TOML file and from env vars:\n  "
        + "\n  ".join(env_vars(VerifySettings)),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--table", help="Delta table path or URI, as the producer reads it")
    p.add_argument("--topic", help="the producer's topic (default: cdfbridge.<table name>)")
    p.add_argument("--clickhouse-table", help="target table (default: from the topic)")
    p.add_argument("--primary-key", help="key columns, comma-separated (default: ORDER BY)")
    p.add_argument("--version", type=int, help="Delta version (default: last published)")
    p.add_argument(
        "--latest",
        action="store_true",
        default=None,
        help="compare at the table's latest version, not the last published one; with --wait, "
        "until the producer and the consumer have delivered it",
    )
    p.add_argument(
        "--exclude-columns",
        metavar="COL[,COL]",
        help="columns the producer leaves out (its --exclude-columns): not compared",
    )
    p.add_argument(
        "--hash-columns",
        metavar="COL[,COL]",
        help="columns the producer publishes hashed (its --hash-columns): the Delta side is "
        "compared as their SHA-256",
    )
    p.add_argument(
        "--wait",
        dest="wait_seconds",
        type=float,
        help="seconds to keep comparing until equal, while the consumer catches up",
    )
    p.add_argument(
        "--storage-option",
        action="append",
        metavar="KEY=VALUE",
        default=[],
        help="delta-rs object-store option, repeatable (e.g. AWS_REGION=eu-west-1); the Spark "
        "reader takes [storage] and CDFBRIDGE_SPARK__CONF instead",
    )
    p.add_argument(
        "--reader",
        choices=("auto", "delta-rs", "spark"),
        help="what reads the Delta snapshot (default auto: delta-rs, file by file as a pyarrow "
        "dataset, or through its DataFusion scan for deletion vectors and column mapping; "
        "Spark, with the producer's session settings, for any other reader feature)",
    )
    p.add_argument(
        "--as-of",
        action="store_true",
        default=None,
        help="compare inside ClickHouse as of the last version the consumer group has consumed "
        "whole, leaving out the keys changed since: works while the pipeline runs",
    )
    p.add_argument(
        "--repair",
        action="store_true",
        default=None,
        help="with --as-of (implied): write the Delta table's rows for the lost and wrong keys "
        "and deletes for the extra ones, each losing to any later change, then compare again",
    )
    p.add_argument(
        "--watch",
        action="store_true",
        default=None,
        help="compare every table in turn as of its consumed version, forever, with Prometheus "
        "metrics on --metrics-port; with --repair, repair what drifts",
    )
    p.add_argument("--group", help="the consumer group filling the table (as-of modes)")
    p.add_argument(
        "--interval",
        dest="interval_seconds",
        type=float,
        help="--watch: the least seconds between two rounds of one table (default 60)",
    )
    p.add_argument(
        "--slices",
        type=int,
        help="--watch: compare one of this many slices of the keys a round (default 1: all)",
    )
    p.add_argument(
        "--metrics-port", type=int, help="--watch: /metrics and /health port (default 9466)"
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--config",
        type=Path,
        help="TOML file with [verify], [kafka], [clickhouse], [storage], [spark]; with "
        "[[tables]] (as the producer and the consumer read it), every table is compared "
        "unless --table picks one",
    )
    return p


def settings_from(args: argparse.Namespace) -> VerifySettings:
    """Flags over --config file over env vars over defaults."""
    values: dict[str, Any] = tomllib.loads(args.config.read_text()) if args.config else {}
    values = own_sections(values, VerifySettings)
    flags = {
        k: v
        for k, v in vars(args).items()
        if v is not None and k not in ("config", "json", "storage_option")
    }
    section: dict[str, Any] = values.setdefault("verify", {})
    section.update(flags)
    for item in args.storage_option:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--storage-option {key!r} is not KEY=VALUE")
        section.setdefault("storage_options", {})[key] = value
    return VerifySettings(**values)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

    def compare(settings: VerifySettings) -> int:
        from verify.check import verify
        from verify.rounds import once

        s = settings.verify
        if s.watch:
            return watch(settings)
        reports = once(settings) if s.as_of or s.repair else [verify(t) for t in settings.each()]
        if args.json:
            found = [report.as_dict() for report in reports]
            print(json.dumps(found[0] if len(found) == 1 else found, default=str, indent=2))
        else:
            print("\n\n".join(report.render() for report in reports))
        return 0 if all(report.equal for report in reports) else 1

    return run_command("cdfbridge-verify", lambda: settings_from(args), compare)


def watch(settings: VerifySettings) -> int:
    """--watch, until SIGTERM or SIGINT."""
    import signal

    from verify.watch import Watch

    watcher = Watch(settings)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: watcher.stop.set())
    watcher.run()
    return 0
