"""What each `cdfbridge-consumer` command does with its settings and arguments
(consumer/cli.py parses them); each returns the process's exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from consumer.settings import ConsumerSettings

Command = Callable[[ConsumerSettings, argparse.Namespace], int]


def _run(settings: ConsumerSettings, args: argparse.Namespace) -> int:
    """0, or with several topics, the worst exit code of those that stopped on an error."""
    from consumer.process import run, worst

    failures = run(settings, until_caught_up=getattr(args, "until_caught_up", False))
    for failure in failures:
        print(
            f"cdfbridge-consumer: topic {failure.topic} stopped: {failure.error}", file=sys.stderr
        )
    return worst(failures)


def _kafka_engine_ddl(settings: ConsumerSettings, args: argparse.Namespace) -> int:
    from consumer.kafka_engine import plan as kafka_engine
    from consumer.topics import resolve

    group = args.kafka_group or f"{settings.consumer.group}-clickhouse"
    if args.watch:
        from consumer.kafka_engine.watch import watch

        watch(settings, group, args.num_consumers)
        return 0
    # Printed alone, the DDL is for ClickHouse 26.x; applied, it fits the server.
    nullable_tuple = kafka_engine.nullable_tuples(settings) if args.apply else True
    topics = resolve(settings)
    for each in topics:
        chosen = kafka_engine.plan(each, group, args.num_consumers, nullable_tuple)
        if len(topics) > 1:
            print(f"-- topic {each.consumer.topic}\n")
        if each.clickhouse.cluster and not chosen.keeper:
            servers = ", ".join(each.clickhouse.node_urls)
            print(f"-- a cluster without Keeper: run each statement on every server: {servers}\n")
        for statement in chosen.statements():
            print(f"{statement};\n")
        if args.apply:
            kafka_engine.apply(each, chosen)
            print(f"-- {each.consumer.topic} applied in {each.clickhouse.url}", file=sys.stderr)
    return 0


def _rebuild(settings: ConsumerSettings, args: argparse.Namespace) -> int:
    from consumer.rebuild.steps import rebuild

    done = rebuild(settings.one("rebuild"), args.rebuild_group or "", args.source or "auto")
    since = f", from generation {done.generation}" if done.generation else ""
    lake = f", loaded from the lake at version {done.version}" if done.source == "lake" else ""
    print(f"rebuilt {done.table} with group {done.group}: {done.rows} rows{since}{lake}")
    return 0


def _bootstrap(settings: ConsumerSettings, args: argparse.Namespace) -> int:
    from consumer.rebuild.steps import bootstrap

    done = bootstrap(settings.one("bootstrap"))
    print(
        f"bootstrapped {done.table} from the lake at version {done.version}: {done.rows} rows; "
        f"group {done.group} follows the topic from there"
    )
    return 0


def _reset_offsets(settings: ConsumerSettings, args: argparse.Namespace) -> int:
    from services import offsets

    settings = settings.one("reset-offsets")
    kafka = settings.kafka.client_config()
    chosen = offsets.targets(
        kafka,
        settings.consumer.topic,
        earliest=args.to_earliest,
        at=args.to_datetime,
        offset=args.to_offset,
        partitions=args.partition,
    )
    offsets.reset(kafka, settings.consumer.group, chosen)
    for tp in chosen:
        print(f"group {settings.consumer.group} partition {tp.partition}: offset {tp.offset}")
    return 0


def _status(settings: ConsumerSettings, args: argparse.Namespace) -> int:
    """A block per topic."""
    from consumer.status import status
    from consumer.topics import resolve

    print("\n\n".join("\n".join(status(each).lines()) for each in resolve(settings)))
    return 0


COMMANDS: dict[str, Command] = {
    "run": _run,
    "kafka-engine-ddl": _kafka_engine_ddl,
    "rebuild": _rebuild,
    "bootstrap": _bootstrap,
    "reset-offsets": _reset_offsets,
    "status": _status,
}
