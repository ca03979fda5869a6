"""What a lake's start asks of the schema registry to register its tables' schemas: a
first start against a restart, whose progress records name the schemas its topics were
published with (producer/encode/registry.py).

    .venv/bin/python bench/registry_bench.py [--tables 200] [--threads 4]

Runs TopicSchemas.use for --tables new topics, --threads at a time (as a lake's start
turns do), then again as a restart would, each topic's published value schema id carried.
Prints each pass's wall time, its requests' mean, and the registry's CPU (the stack's
registry process, read from /proc) for each. Needs the stack's registry
(`cdfbridge-stack up`).
"""

from __future__ import annotations

import argparse
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from output import table
from stages import tree_cpu_s
from subjects import forget

from producer.encode.registry import TopicSchemas
from services.registry_client import registry_client
from services.settings import SchemaRegistrySettings
from stack import services
from stack.settings import StackSettings

KEY = {"type": "record", "name": "k", "fields": [{"name": "id", "type": "long"}]}
VALUE = {
    "type": "record",
    "name": "v",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": ["null", "string"]},
        {"name": "_change_type", "type": "string"},
    ],
}


def registry_cpu_s() -> float:
    """CPU seconds of the stack's registry process so far."""
    found = [x.pid for x in services.status(StackSettings()) if x.name == "registry" and x.pid]
    return tree_cpu_s(found[0]) if found else float("nan")


def run(
    registry: SchemaRegistrySettings, topics: list[str], carried: dict[str, int], threads: int
) -> tuple[float, float, dict[str, int]]:
    """Each topic's schemas used once; (wall s, registry CPU s, value schema id by topic)."""
    client = registry_client(registry.client_config())

    def use(topic: str) -> tuple[str, int]:
        schemas = TopicSchemas(client, registry.url, topic, topic)
        schemas.carried_value = carried.get(topic)
        schemas.use(KEY, VALUE, version=1)
        assert schemas.value is not None  # noqa: S101
        return topic, schemas.value.schema_id

    began, cpu = time.monotonic(), registry_cpu_s()
    with ThreadPoolExecutor(threads) as pool:
        ids = dict(pool.map(use, topics))
    return time.monotonic() - began, registry_cpu_s() - cpu, ids


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tables", type=int, default=200)
    p.add_argument("--threads", type=int, default=4, help="tables registering at once")
    args = p.parse_args()
    registry = SchemaRegistrySettings()
    tag = uuid.uuid4().hex[:8]
    topics = [f"cdfbridge.registry_bench_{tag}_{i:03d}" for i in range(args.tables)]
    first = run(registry, topics, {}, args.threads)
    again = run(registry, topics, first[2], args.threads)
    rows = []
    for name, (wall, cpu, _) in (("first start", first), ("restart", again)):
        rows.append(
            [name, round(wall, 2), round(wall / len(topics) * args.threads * 1000), round(cpu, 1)]
        )
    print(table(["pass", "wall s", "ms a table", "registry CPU s"], rows))
    forget(registry.client_config(), topics)  # the subjects made, gone again


if __name__ == "__main__":
    main()
