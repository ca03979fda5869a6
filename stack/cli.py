"""`cdfbridge-stack`: fetch, start, stop and inspect the local services."""

from __future__ import annotations

import argparse
import shlex
import sys

from pydantic import ValidationError

from schemas.errors import CdfBridgeError
from services.settings import describe
from stack import services
from stack.credentials import CLICKHOUSE_USER, KAFKA_USER, REGISTRY_USER, Credentials
from stack.fetch import TARGETS, fetch
from stack.s3 import S3
from stack.settings import StackSettings

EPILOG = """\
settings (env vars):
  CDFBRIDGE_STACK_HOME                 state directory (default ./.stack)
  CDFBRIDGE_STACK_KAFKA_PORT           default 9092 (controller: ..._KAFKA_CONTROLLER_PORT, 9093)
  CDFBRIDGE_STACK_REGISTRY_PORT        default 8081 (health: ..._REGISTRY_MANAGEMENT_PORT, 8091)
  CDFBRIDGE_STACK_CLICKHOUSE_HTTP_PORT default 8123 (native TCP: ..._CLICKHOUSE_TCP_PORT, 9000)
  CDFBRIDGE_STACK_S3_PORT              default 9300 (MinIO; bucket: ..._S3_BUCKET, lake)
  CDFBRIDGE_STACK_AZURE_PORT           default 10000 (Azurite; container: ..._AZURE_CONTAINER, lake)
  CDFBRIDGE_STACK_MINIO_BINARY         a minio binary to run instead of building one with Go
  CDFBRIDGE_STACK_SPARK_MASTER_PORT    default 7077 (web UI: ..._SPARK_MASTER_UI_PORT, 8092;
                                       worker UI: ..._SPARK_WORKER_UI_PORT, 8094)
  CDFBRIDGE_STACK_LISTEN_HOST          default 127.0.0.1; 0.0.0.0 in a container (serve)
  CDFBRIDGE_STACK_KAFKA_ADVERTISED_HOST the host name Kafka gives clients (default 127.0.0.1)
  CDFBRIDGE_STACK_KAFKA_EXTERNAL       HOST:PORT of a second listener for clients outside a
                                       container network (bound to ..._KAFKA_EXTERNAL_PORT, 29092)
  CDFBRIDGE_STACK_LIB_DIR              where fetched jars go (default <home>/lib)
  CDFBRIDGE_STACK_SECURE               true: the secured stack, as --secure
  CDFBRIDGE_STACK_CLICKHOUSE_HTTPS_PORT default 8443, and ..._REGISTRY_HTTPS_PORT 8444: the
                                       secured stack's TLS proxy (nginx)

the secured stack (--secure) runs beside the plain one, in <home>/secure and on ports 100
higher: Kafka over SASL_SSL (SCRAM-SHA-512), ClickHouse with a user and password and the
registry with basic auth, both over TLS. Its CA, certificate and passwords are made on first
start in <home>/secure/secrets; `env --secure` points at those files, never prints them.

exit codes: 0 ok, 1 a service failed or is down (status, probe), 2 bad settings or arguments;
serve becomes the service, so its exit code is the service's
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="cdfbridge-stack",
        description="Run Kafka (KRaft), a schema registry, ClickHouse and, when named, an S3 "
        "server (MinIO), the Azure Storage emulator (Azurite) and a standalone Spark cluster on "
        "127.0.0.1.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    fetch_cmd = commands.add_parser(
        "fetch", help="download the jars, build MinIO, install Azurite and Mermaid (once each)"
    )
    fetch_cmd.add_argument("targets", nargs="*", help=f"any of {', '.join(TARGETS)} (default: all)")
    for name, text in (
        ("up", f"start services (default: {' '.join(services.DEFAULT)})"),
        ("down", "stop services (default: all)"),
    ):
        cmd = commands.add_parser(name, help=text)
        names = ", ".join([*services.NAMES, *services.GROUPS])
        cmd.add_argument("service", nargs="*", help=f"any of {names}")
        _secure_flag(cmd)
        if name == "down":
            cmd.add_argument(
                "--wipe",
                action="store_true",
                help="then delete their data (topics, schemas, tables) and logs; jars stay",
            )
    for name, text in (
        ("serve", "run one service in the foreground, as a container's main process"),
        ("probe", "exit 0 if one service answers, else 1 (a container's healthcheck)"),
    ):
        cmd = commands.add_parser(name, help=text)
        cmd.add_argument("service", nargs=1, choices=services.NAMES)
        _secure_flag(cmd)
    _secure_flag(commands.add_parser("status", help="say which services are up, with endpoints"))
    _secure_flag(commands.add_parser("env", help="print env vars pointing cdfbridge at the stack"))
    args = parser.parse_args(argv)

    try:
        settings = StackSettings()
        if getattr(args, "secure", False):
            settings = StackSettings(secure=True)
    except ValidationError as exc:
        print(f"cdfbridge-stack: invalid settings:\n{describe(exc)}", file=sys.stderr)
        return 2
    secure_only = set(getattr(args, "service", None) or ()) & services.SECURE_ONLY
    if secure_only and not settings.secure:
        parser.error(f"{', '.join(sorted(secure_only))} belongs to the secured stack: add --secure")
    try:
        return _run(args, settings)
    except CdfBridgeError as exc:
        print(f"cdfbridge-stack: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace, settings: StackSettings) -> int:
    named = tuple(getattr(args, "service", None) or ())
    if args.command == "fetch":
        fetch(settings, tuple(args.targets) or TARGETS)
    elif args.command == "up":
        for status in services.up(settings, named or services.DEFAULT):
            print(status.line())
    elif args.command == "serve":
        services.select(settings, named)[0].serve()
    elif args.command == "probe":
        return 0 if services.select(settings, named)[0].answers() else 1
    elif args.command == "down":
        services.down(settings, named or services.NAMES, wipe=args.wipe)
    elif args.command == "status":
        statuses = services.status(settings)
        for status in statuses:
            print(status.line())
        return 0 if all(s.ready for s in statuses) else 1
    elif args.command == "env":
        print(f"export CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS={settings.kafka_bootstrap}")
        print(f"export CDFBRIDGE_SCHEMA_REGISTRY__URL={settings.registry_url}")
        print(f"export CDFBRIDGE_CLICKHOUSE__URL={settings.clickhouse_url}")
        if settings.secure:
            print_secure_env(Credentials(settings))
        print_s3_env(S3(settings))
    return 0


def _secure_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--secure", action="store_true", help="the secured stack (TLS, SASL, passwords)"
    )


def print_secure_env(credentials: Credentials) -> None:
    """The secured stack's users, CA and passwords: each password is read from its file
    when the lines are evaluated, never printed."""
    credentials.ensure()
    ca = shlex.quote(str(credentials.ca_path))

    def password(service: str) -> str:
        return f'"$(cat {shlex.quote(str(credentials.password_path(service)))})"'

    print("export CDFBRIDGE_KAFKA__SECURITY_PROTOCOL=SASL_SSL")
    print("export CDFBRIDGE_KAFKA__SASL_MECHANISM=SCRAM-SHA-512")
    print(f"export CDFBRIDGE_KAFKA__SASL_USERNAME={KAFKA_USER}")
    print(f"export CDFBRIDGE_KAFKA__SASL_PASSWORD={password('kafka')}")
    print(f"export CDFBRIDGE_KAFKA__SSL_CA_LOCATION={ca}")
    # The stack's ClickHouse (chdb-core) has a librdkafka without SCRAM.
    print("export CDFBRIDGE_CONSUMER__KAFKA_SASL_MECHANISM_FOR_CLICKHOUSE=PLAIN")
    user_info = password("registry").replace('"$(', f'"{REGISTRY_USER}:$(', 1)
    print(f"export CDFBRIDGE_SCHEMA_REGISTRY__BASIC_AUTH_USER_INFO={user_info}")
    print(f"export CDFBRIDGE_SCHEMA_REGISTRY__SSL_CA_LOCATION={ca}")
    print(f"export CDFBRIDGE_CLICKHOUSE__USERNAME={CLICKHOUSE_USER}")
    print(f"export CDFBRIDGE_CLICKHOUSE__PASSWORD={password('clickhouse')}")
    print(f"export CDFBRIDGE_CLICKHOUSE__SSL_CA_LOCATION={ca}")


def print_s3_env(s3: S3) -> None:
    """The storage settings for the stack's MinIO while it runs (`up s3`); the keys are
    read from their files when the lines are evaluated, never printed. A stopped MinIO is
    left out, so that nothing is pointed at an endpoint that does not answer."""
    if not s3.secret_key_path.exists() or s3.pid() is None:
        return
    print(f"# tables: s3a://{s3.settings.s3_bucket}/<name>")
    print(f"export CDFBRIDGE_STORAGE__ENDPOINT={s3.endpoint}")
    print("export CDFBRIDGE_STORAGE__ALLOW_HTTP=true CDFBRIDGE_STORAGE__PATH_STYLE_ACCESS=true")
    print(f'export CDFBRIDGE_STORAGE__ACCESS_KEY_ID="$(cat {s3.access_key_path})"')
    print(f'export CDFBRIDGE_STORAGE__SECRET_ACCESS_KEY="$(cat {s3.secret_key_path})"')


if __name__ == "__main__":
    sys.exit(main())
