"""Benchmark: the Python consumer into one ClickHouse server against a cluster of two.

Fills a fresh topic with N change events (as bench/consumer_bench.py does), then, in the
same run, `cdfbridge-consumer run` fills one server's table, and then a table on the local
cluster of two shards (`cdfbridge-stack up cluster`): inserts go through the Distributed
table, each batch's rows routed to their keys' shards and acknowledged by both before the
offsets are committed. Prints both rows/s and their ratio: the cost of routing (the two
shards share the machine's cores, so no speed-up is expected).

    .venv/bin/cdfbridge-stack up cluster
    .venv/bin/python bench/consumer_shards_bench.py --rows 1000000
"""

from __future__ import annotations

import json

import clickhouse_connect
from consumer_bench import fill, new_topic, parser, python_consumer
from output import bars, save

from stack.cluster import CLUSTER
from stack.settings import StackSettings


def main() -> None:
    args = parser().parse_args()
    admin, topic = new_topic(args)
    database = topic
    stack = StackSettings()
    urls = [stack.shard_url(n) for n in (1, 2)]
    servers = [clickhouse_connect.get_client(dsn=url) for url in (args.clickhouse, *urls)]
    for server in servers:
        server.command(f"CREATE DATABASE `{database}`")
    try:
        fill(args, topic)
        one = python_consumer(args, topic, database, servers[0], "one")
        cluster = {
            "CDFBRIDGE_CLICKHOUSE__URL": urls[0],
            "CDFBRIDGE_CLICKHOUSE__CLUSTER": CLUSTER,
            "CDFBRIDGE_CLICKHOUSE__NODE_URLS": json.dumps(urls),
        }
        two = python_consumer(args, topic, database, servers[1], "two", cluster)
        local = f"`{database}`.`by_python_local`"
        held = [int(s.command(f"SELECT count() FROM {local}")) for s in servers[1:]]  # noqa: S608
    finally:
        for server in servers:
            server.command(f"DROP DATABASE IF EXISTS `{database}` SYNC")
        for future in admin.delete_topics([topic, f"{topic}.dlq"]).values():
            future.result(timeout=30)
    ratio = two.rows_per_s / one.rows_per_s
    print(f"python consumer, one server : {one.rows_per_s:>9,.0f} rows/s")
    print(f"python consumer, two shards : {two.rows_per_s:>9,.0f} rows/s, per shard {held}")
    print(f"ratio two shards / one server: {ratio:.2f}x")
    result = {
        "rows": args.rows,
        "partitions": args.partitions,
        "one_server_rows_per_s": round(one.rows_per_s),
        "two_shards_rows_per_s": round(two.rows_per_s),
        "rows_per_shard": held,
        "ratio": round(ratio, 2),
    }
    draw = bars(["one server", "two shards"], [one.rows_per_s, two.rows_per_s], "rows/s")
    paths = save("consumer_shards", result, draw, f"{args.rows:,} rows into ClickHouse")
    print(f"wrote {paths[0]} and {paths[1]}")


if __name__ == "__main__":
    main()
