"""`cdfbridge-stack`: fetch, start, stop and inspect the local services."""

from __future__ import annotations

import argparse
import sys

from pydantic import ValidationError

from schemas.errors import CdfBridgeError
from schemas.settings import describe
from stack import services
from stack.fetch import GOALS, fetch
from stack.settings import StackSettings

EPILOG = """\
settings (env vars):
  CDFBRIDGE_STACK_HOME                 state directory (default ./.stack)
  CDFBRIDGE_STACK_KAFKA_PORT           default 9092 (controller: ..._KAFKA_CONTROLLER_PORT, 9093)
  CDFBRIDGE_STACK_REGISTRY_PORT        default 8081 (health: ..._REGISTRY_MANAGEMENT_PORT, 8091)
  CDFBRIDGE_STACK_CLICKHOUSE_HTTP_PORT default 8123 (native TCP: ..._CLICKHOUSE_TCP_PORT, 9000)

exit codes: 0 ok, 1 a service failed or is down (status), 2 bad settings or arguments
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="cdfbridge-stack",
        description="Run Kafka (KRaft), a schema registry and ClickHouse on 127.0.0.1.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    fetch_cmd = commands.add_parser("fetch", help="download the jars from Maven Central (once)")
    fetch_cmd.add_argument("jars", nargs="*", help=f"any of {', '.join(GOALS)} (default: all)")
    for name, text in (("up", "start services (all by default)"), ("down", "stop services")):
        cmd = commands.add_parser(name, help=text)
        cmd.add_argument("service", nargs="*", help=f"any of {', '.join(services.NAMES)}")
    commands.add_parser("status", help="say which services are up, with their endpoints")
    commands.add_parser("env", help="print env vars that point cdfbridge at this stack")
    args = parser.parse_args(argv)

    try:
        settings = StackSettings()
    except ValidationError as exc:
        print(f"cdfbridge-stack: invalid settings:\n{describe(exc)}", file=sys.stderr)
        return 2
    try:
        return _run(args, settings)
    except CdfBridgeError as exc:
        print(f"cdfbridge-stack: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace, settings: StackSettings) -> int:
    names = tuple(getattr(args, "service", None) or services.NAMES)
    if args.command == "fetch":
        fetch(settings, tuple(args.jars) or tuple(GOALS))
    elif args.command == "up":
        for status in services.up(settings, names):
            print(status.line())
    elif args.command == "down":
        services.down(settings, names)
    elif args.command == "status":
        statuses = services.status(settings)
        for status in statuses:
            print(status.line())
        return 0 if all(s.ready for s in statuses) else 1
    elif args.command == "env":
        print(f"export CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS={settings.kafka_bootstrap}")
        print(f"export CDFBRIDGE_SCHEMA_REGISTRY__URL={settings.registry_url}")
        print(f"export CDFBRIDGE_CLICKHOUSE__URL={settings.clickhouse_url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
