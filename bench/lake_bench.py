"""Many tables through one producer and one consumer: freshness per table and memory.

    .venv/bin/python bench/lake_bench.py --tables 1 --tables 20 [--seconds 60]
    .venv/bin/python bench/lake_bench.py --tables 5 --backfill-rows 5000000

For each --tables N: N Delta tables (the demo generator's shape) each take a commit of
--rows-per-commit inserts every --interval seconds, staggered (table i at i/N of the
interval; --burst: all at its start, as before 2026-11-28), while one producer
(`[[tables]]` in a config file) and one consumer (the same file) follow them all. A
commit's freshness is the time from its Delta commit until ClickHouse has stored all its
rows (one query over every table's insert counter). Each table holds one such commit
before the producer starts, so every start reads the same backlog. "Tables published" is
the start-up: from the producer's start until the first table, half the tables and every
table has published its first chunk (that commit).
Measuring starts after --warmup-s and once every table's commit two back is stored. Prints
p50/p99/max per table and over all, and the producer's and consumer's peak RSS (process
trees: Python + Spark JVM); with several counts, the producer's peak RSS against the first
count's.

When a commit's rows were stored is read once, at the end, from the counter's stamps
(bench/target.py: each insert's time, to the millisecond), so the bench does not load
ClickHouse while measuring (asking it every 0.2 s over 200 counters cost about a fifth of
a core). The producer's share of it, from the commit until its chunk was published, is
read from the producer's log (`published`). The producer's CPU (its process tree, as a
share of one core) is measured over the same window.

--idle: each table takes IDLE_COMMITS commits; once the producer has published them all
(its log says, IDLE_SETTLE_S before), no table commits while measured, which shows what
following idle tables costs. --idle --no-consumer runs the producer alone.

Each stage's CPU (its process tree, as a share of one core) is measured over the measured
window; its long-lived Kafka clients are counted at the end of it (librdkafka's `rdk:main`
threads), and so are the consumer group's members, as the broker describes the group.

--backfill-rows R adds a table of R changes (inserts, 5% updated, 1% deleted: the backlog of
bench/producer_bench.py) that the producer backfills from version 0 while the N tables keep
committing; their freshness is measured while it runs, and the backfill's rows/s is printed.

--peer runs each count again through bench/peer_streaming.py, the Spark job one would write
instead (a Structured Streaming query a table, readChangeFeed, foreachBatch into the same
ClickHouse tables, no Kafka), on the same generator and counter; its rows say "(peer)".

--resync-rows R adds a table of R changes that the producer follows from its latest version
(nothing to backfill); when measuring starts, `cdfbridge-producer resync` re-snapshots it
into a new generation of its topic while the N tables keep committing. Their freshness is
measured meanwhile, and how long the snapshot took to reach ClickHouse is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import clickhouse_connect
import target
from output import save, table
from producer_bench import build_table
from stages import PeakRss, kafka_clients, start, tree_cpu_s
from subjects import forget

from schemas.naming import dlq_topic, progress_topic
from services.settings import ConnectionSettings
from stack.generate import Generator

IDLE_COMMITS = 3  # commits each table takes with --idle, before measuring
# ... and how long after the last is published: each table's first poll that finds nothing
# loads its whole log once (producer/follow/idle.py Idle), which is not what idling costs.
IDLE_SETTLE_S = 30.0


def config_text(
    database: str,
    tables: dict[str, tuple[str, str]],
    poll_s: float | None = None,
    extra: dict[str, str] | None = None,
    idle_poll_max_s: float | None = None,
    read_files: bool = True,
    batch_s: float | None = None,
) -> str:
    """[[tables]] for both stages: {name: (path, topic)}, ClickHouse table = name; extra:
    {name: more TOML lines of its entry}. A setting given None keeps its default."""
    polls = f"read_commit_files = {str(read_files).lower()}"
    polls += "" if poll_s is None else f"\npoll_interval_s = {poll_s}"
    polls += "" if idle_poll_max_s is None else f"\nidle_poll_max_s = {idle_poll_max_s}"
    batch = "" if batch_s is None else f"\nbatch_seconds = {batch_s}"
    lines = [
        f'[clickhouse]\ndatabase = "{database}"',
        f"[source]\n{polls}\nmetrics_port = 0",
        f"[consumer]\nmetrics_port = 0{batch}",
    ]
    for name, (path, topic) in tables.items():
        entry = f'table = "{path}"\nprimary_key = "id"\ntopic = "{topic}"\ntarget = "{name}"'
        lines.append(f"[[tables]]\n{entry}\n{(extra or {}).get(name, '')}")
    return "\n\n".join(lines) + "\n"


Arrivals = dict[tuple[str, int], list[tuple[float, int]]]


def arrivals(client: Any, database: str) -> Arrivals:
    """Every insert into the run's tables, by (table, Delta version): (when, rows), in order."""
    rows = client.query(
        "SELECT toFloat64(at), replaceOne(_table, '_inserted', ''), _commit_version, rows "  # noqa: S608
        f"FROM merge('{database}', '_inserted$') ORDER BY at"
    ).result_rows
    found: Arrivals = {}
    for at, t, v, n in rows:
        found.setdefault((str(t), int(v)), []).append((float(at), int(n)))
    return found


def stored_at(inserts: Arrivals, key: tuple[str, int], rows: int) -> float | None:
    """When key's inserts first summed to rows (a redelivery may add more), or None."""
    total = 0
    for at, n in inserts.get(key, []):
        total += n
        if total >= rows:
            return at
    return None


def visible(client: Any, database: str) -> dict[tuple[str, int], int]:
    """Rows stored so far per (table, Delta version), over every table's counter."""
    rows = client.query(
        "SELECT replaceOne(_table, '_inserted', ''), _commit_version, sum(rows) "  # noqa: S608
        f"FROM merge('{database}', '_inserted$') GROUP BY 1, 2"
    ).result_rows
    return {(str(t), int(v)): int(n) for t, v, n in rows}


def _delete_topics(settings: ConnectionSettings, topics: list[str]) -> None:
    """The run's topics deleted: a 200-table run makes 600, and a small broker's heap
    (the local stack's 512 MiB) runs out at a few thousand."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    every = [t for topic in topics for t in (topic, progress_topic(topic), dlq_topic(topic))]
    admin = AdminClient(settings.kafka.client_config())
    for future in admin.delete_topics(every, operation_timeout=60).values():
        try:
            future.result(timeout=120)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:  # never made: no DLQ
                raise


def scenario(
    args: argparse.Namespace, count: int, root: Path, peer: bool = False
) -> dict[str, Any]:
    """One run of count tables through cdfbridge, or with peer through bench/peer_streaming.py
    (its one process in the producer's place, no consumer; "published" is then stored)."""
    settings = ConnectionSettings()
    client = clickhouse_connect.get_client(dsn=settings.clickhouse.url)
    database = f"bench_lake_{uuid.uuid4().hex[:8]}"
    client.command(f"CREATE DATABASE `{database}`")
    run_id = uuid.uuid4().hex[:6]
    names = [f"t{i:02d}" for i in range(count)]
    tables = {n: (str(root / f"{run_id}_{n}"), f"cdfbridge.lake_{run_id}_{n}") for n in names}
    # A checkpoint every 10 commits, as Spark writes them (delta-rs: every 100).
    generators = {
        n: Generator(tables[n][0], seed=i, checkpoint_interval=10) for i, n in enumerate(names)
    }
    # One commit each before the producer starts: every start reads the same backlog, a
    # first read of --rows-per-commit changes a table, however the set-up's timing falls.
    with ThreadPoolExecutor(max_workers=4) as setup:
        list(setup.map(lambda n: generators[n].commit("insert", args.rows_per_commit), names))
    if args.backfill_rows:
        path = root / f"backlog_{args.backfill_rows}"
        build_table(path, args.backfill_rows)
        tables["backfill"] = (str(path), f"cdfbridge.lake_{run_id}_backfill")
    extra, resynced = {}, (0, 0)  # resynced: (its last version, its rows)
    if args.resync_rows:
        path = root / f"backlog_{args.resync_rows}"
        resynced = (build_table(path, args.resync_rows), _row_count(path))
        tables["resync"] = (str(path), f"cdfbridge.lake_{run_id}_resync")
        extra["resync"] = f"starting_version = {resynced[0]}"  # nothing to backfill
    for name in tables:
        target.create(client, database, name)
    config = root / f"{run_id}.toml"
    config.write_text(
        config_text(
            database,
            tables,
            args.poll_interval,
            extra,
            args.idle_poll_max,
            args.reader == "files",
            args.batch_seconds,
        )
    )
    logs = Path(__file__).parent / "results" / "logs"
    env = {**os.environ}
    started_at = time.time()
    log = logs / f"lake_{run_id}.{'peer' if peer else 'producer'}.log"
    command = ["producer", "--config", str(config), "--log-level", args.producer_log_level]
    if peer:
        command = [str(Path(__file__).with_name("peer_streaming.py")), "--config", str(config)]
    producer = start(command, env, log, module=not peer)
    # --no-consumer measures the producer alone, so there is no ClickHouse to wait for.
    consumer = None
    if not args.no_consumer and not peer:
        command = ["consumer", "--config", str(config), "run"]
        consumer = start(command, env, logs / f"lake_{run_id}.consumer.log")
    stages = [stage for stage in (producer, consumer) if stage is not None]
    rss = {"producer": PeakRss(producer.pid)}
    if consumer is not None:
        rss["consumer"] = PeakRss(consumer.pid)
    for sampler in rss.values():
        sampler.start()
    committed: dict[tuple[str, int], tuple[float, int]] = {}  # → (commit time, rows)
    samples: list[tuple[float, dict[tuple[str, int], int]]] = []  # at each tick: what is stored
    began, tick, measured_from = time.monotonic(), 0, None
    pool = ThreadPoolExecutor(max_workers=4)

    def commit(name: str) -> tuple[int, float]:
        return generators[name].commit("insert", args.rows_per_commit), time.time()

    def commits(tick_at: float) -> list[tuple[int, float]]:
        """Each table's commit of the tick: spread evenly over the interval (table i at
        i/N of it), or all at its start with --burst; (version, when) per table."""
        futures = []
        for i, name in enumerate(names):
            if not args.burst:
                time.sleep(max(0.0, tick_at + i * args.interval / count - time.monotonic()))
            futures.append(pool.submit(commit, name))
        return [future.result() for future in futures]

    versions: dict[str, int] = {}
    try:
        while measured_from is None or tick < measured_from + args.seconds / args.interval:
            tick_at = began + tick * args.interval
            time.sleep(max(0.0, tick_at - time.monotonic()))
            if not args.idle or tick < IDLE_COMMITS:  # idle: a few commits, then none
                for name, (version, at) in zip(names, commits(tick_at), strict=True):
                    versions[name] = version
                    committed[(name, version)] = (at, args.rows_per_commit)
            samples.append((time.time(), visible(client, database)))
            elapsed = time.monotonic() - began
            warm = elapsed >= args.warmup_s
            if args.idle or args.no_consumer:  # every table's last commit published
                sent = published_at(log)
                last = [sent.get((tables[n][1], v)) for n, v in versions.items()]
                caught_up = all(at is not None and at < time.time() - IDLE_SETTLE_S for at in last)
            else:
                caught_up = _caught_up(samples[-1][1], versions, args)
            if measured_from is None and warm and (caught_up or elapsed >= args.max_warmup_s):
                behind_at_start = not caught_up
                measured_from, first = tick, dict(versions)
                cpu_from = (time.monotonic(), {s.pid: tree_cpu_s(s.pid) for s in stages})
                backfilled = [(time.time(), _rows_of(samples[-1][1], "backfill"))]
                if args.resync_rows:
                    before = samples[-1][1].get(("resync", resynced[0]), 0)
                    resync_asked = (time.time(), before)
                    _resync(config, tables["resync"][1], env)
            tick += 1
            if any(stage.poll() is not None for stage in stages):
                raise SystemExit(f"a stage exited; logs in {logs}/lake_{run_id}.*.log")
        samples.append((time.time(), visible(client, database)))
        backfilled.append((time.time(), _rows_of(samples[-1][1], "backfill")))
        window = time.monotonic() - cpu_from[0]
        cpu = {
            pid: round(100 * (tree_cpu_s(pid) - s) / window, 1) for pid, s in cpu_from[1].items()
        }
        clients = {s.pid: kafka_clients(s.pid) for s in stages}
        members = _members(settings, "cdfbridge-consumer") if consumer is not None else None
        deadline = time.monotonic() + (0 if args.idle or args.no_consumer else 60)
        while time.monotonic() < deadline and not _caught_up(
            samples[-1][1], versions, args, back=0
        ):
            time.sleep(1.0)
            samples.append((time.time(), visible(client, database)))
        inserts = arrivals(client, database)
    finally:
        for stage in stages:
            stage.send_signal(signal.SIGTERM)
            stage.wait(120)
        for sampler in rss.values():
            sampler.done.set()
        client.command(f"DROP DATABASE `{database}`")
        _delete_topics(settings, [topic for _, topic in tables.values()])
        forget(settings.schema_registry.client_config(), [t for _, t in tables.values()])
    lags: dict[str, list[float]] = {name: [] for name in names}
    published = published_at(log)
    producer_lags: list[float] = []
    for (name, version), (at, rows) in committed.items():
        if version < first[name] or args.idle:  # --idle measures no commit
            continue
        seen = stored_at(inserts, (name, version), rows)
        lags[name].append(float("inf") if seen is None else seen - at)
        sent = published.get((tables[name][1], version))
        if not peer:  # the peer publishes nothing: only what it stored is measured
            producer_lags.append(float("inf") if sent is None else sent - at)
    if peer:  # its first insert of each table, as no chunk is published
        firsts = [
            min((when for (t, _), a in inserts.items() if t == n for when, _ in a), default=None)
            for n in names
        ]
    else:
        firsts = [
            min((at for (topic, _), at in published.items() if topic == tables[n][1]), default=None)
            for n in names
        ]
    # Start-up: until the first, half and every table has published its first chunk.
    known = sorted(round(f - started_at, 1) for f in firsts if f is not None)
    heads_s = None if None in firsts else known[-1]
    first_s = known[0] if known else None
    half_s = known[(len(firsts) - 1) // 2] if len(known) > (len(firsts) - 1) // 2 else None
    (t0, r0), (t1, r1) = backfilled
    backfill = {
        "stored_at_start": r0,
        "stored_at_end": r1,
        "rows_per_s": round((r1 - r0) / (t1 - t0)),
    }
    resync: dict[str, Any] = {}
    if args.resync_rows:
        (asked_at, before), (version, rows) = resync_asked, resynced
        done = stored_at(inserts, ("resync", version), before + rows)
        took = None if done is None else round(done - asked_at, 1)
        resync = {"snapshot_rows": rows, "asked_to_stored_s": took}
    return {
        "tables": count,
        "peer": peer,
        "resync": resync,
        "caught_up_when_measured": not behind_at_start,
        "lags": lags,
        "backfill": backfill,
        "producer_cpu_pct": cpu[producer.pid],
        "consumer_cpu_pct": cpu[consumer.pid] if consumer is not None else None,
        "producer_kafka_clients": clients[producer.pid],
        "consumer_kafka_clients": clients[consumer.pid] if consumer is not None else None,
        "consumer_group_members": members,
        "all_published_s": heads_s,
        "first_published_s": first_s,
        "half_published_s": half_s,
        "producer_lags": producer_lags,
        "consumer": 0,
        **{k: v.mib for k, v in rss.items()},
    }


def _members(settings: ConnectionSettings, group: str) -> int:
    """The group's members, as the broker describes the group."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(settings.kafka.client_config())
    return len(admin.describe_consumer_groups([group])[group].result(timeout=30).members)


def published_at(log: Path) -> dict[tuple[str, int], float]:
    """When the producer logged each (topic, version) published: its chunk's log line."""
    found: dict[tuple[str, int], float] = {}
    for line in log.read_text().splitlines():
        if '"chunk_published"' not in line:
            continue
        at = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        event = json.loads(line[line.index("{") :])
        first, _, last = event["versions"].split()[0].partition("-")
        for version in range(int(first), int(last or first) + 1):
            found.setdefault((event["topic"], version), at)
    return found


def _resync(config: Path, topic: str, env: dict[str, str]) -> None:
    """Ask the running producer to resync topic, and return at once."""
    command = [sys.executable, "-m", "producer", "--config", str(config), "resync", topic]
    subprocess.run([*command, "--wait", "0"], env=env, check=True, capture_output=True)  # noqa: S603 - our own command


def _row_count(path: Path) -> int:
    from deltalake import DeltaTable

    return int(DeltaTable(str(path)).to_pyarrow_dataset().count_rows())


def _rows_of(seen: dict[tuple[str, int], int], name: str) -> int:
    return sum(n for (t, _), n in seen.items() if t == name)


def _caught_up(
    seen: dict[tuple[str, int], int],
    versions: dict[str, int],
    args: argparse.Namespace,
    back: int = 2,
) -> bool:
    return all(seen.get((n, v - back), 0) >= args.rows_per_commit for n, v in versions.items())


def _pct(values: list[float], q: int) -> float:
    """The q-th percentile of values (NaN for none: --idle measures no commit)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tables", type=int, action="append", help="tables committing (repeatable)")
    p.add_argument("--rows-per-commit", type=int, default=1_000)
    p.add_argument("--interval", type=float, default=1.0, help="seconds between commits")
    p.add_argument(
        "--burst",
        action="store_true",
        help="every table commits at the start of each interval (default: staggered over it)",
    )
    p.add_argument("--seconds", type=float, default=60.0, help="measured, after warm-up")
    p.add_argument("--warmup-s", type=float, default=30.0)
    p.add_argument(
        "--max-warmup-s",
        type=float,
        default=180.0,
        help="measure from then on even if the pipeline has not caught up (reported)",
    )
    p.add_argument("--poll-interval", type=float, help="the producer's (default: its default)")
    p.add_argument("--idle-poll-max", type=float, help="the producer's idle_poll_max_s (default)")
    p.add_argument("--batch-seconds", type=float, help="the consumer's batch_seconds (default)")
    p.add_argument("--backfill-rows", type=int, default=0, help="a table backfilled meanwhile")
    p.add_argument("--resync-rows", type=int, default=0, help="a table resynced meanwhile")
    p.add_argument(
        "--idle", action="store_true", help="no commits while measured: the stages' CPU then"
    )
    p.add_argument("--no-consumer", action="store_true", help="run the producer alone")
    p.add_argument(
        "--peer",
        action="store_true",
        help="then the same lake through bench/peer_streaming.py (a streaming query a table)",
    )
    p.add_argument(
        "--producer-log-level",
        default="INFO",
        help="DEBUG also logs each cycle: its tables, rows and milliseconds",
    )
    p.add_argument(
        "--reader",
        choices=("files", "delta"),
        default="files",
        help="the producer reads settled commits from their files, or all by Delta's reader",
    )
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cdfbridge-lake-"))
    results = []
    for count in args.tables or [20]:
        results.append(scenario(args, count, root))
        if args.peer:  # the same lake through the Spark job one would write instead
            results.append(scenario(args, count, root, peer=True))
    rows, base = [], results[0]["producer"]
    for result in results:
        every = [lag for lags in result["lags"].values() for lag in lags]
        worst = max(result["lags"].items(), key=lambda item: _pct(item[1], 99))
        rows.append(
            (
                f"{result['tables']}{' (peer)' if result.get('peer') else ''}",
                "yes" if result["caught_up_when_measured"] else "no",
                len(every),
                round(_pct(every, 50), 2),
                round(_pct(every, 99), 2),
                round(_pct(result["producer_lags"], 50), 2),
                round(_pct(result["producer_lags"], 99), 2),
                f"{round(_pct(worst[1], 99), 2)} ({worst[0]})",
                round(max(every, default=float("nan")), 2),
                result["producer"],
                f"{result['producer'] / base:.2f}×",
                result["consumer"],
                result["producer_cpu_pct"],
                result["consumer_cpu_pct"],
                f"{result['producer_kafka_clients']} / {result['consumer_kafka_clients']} / "
                f"{result['consumer_group_members']}",
                f"{result['first_published_s']} / {result['half_published_s']} / "
                f"{result['all_published_s']}",
            )
        )
    print(
        table(
            (
                "tables",
                "caught up at start",
                "commits",
                "p50 s",
                "p99 s",
                "published p50 s",
                "published p99 s",
                "worst table p99 s",
                "max s",
                "producer MiB",
                "vs first",
                "consumer MiB",
                "producer CPU % of a core",
                "consumer CPU % of a core",
                "Kafka clients: producer / consumer / group members",
                "tables published s: first / half / every",
            ),
            rows,
        )
    )
    for result in results:
        if args.backfill_rows:
            print(
                f"backfill of {args.backfill_rows:,} changes while measured: {result['backfill']}"
            )
        if args.resync_rows:
            print(
                f"resync of a table of {args.resync_rows:,} changes while measured: {result['resync']}"
            )

    def draw(axes: Any) -> None:
        for result in results:
            names = sorted(result["lags"])
            axes.plot(
                names,
                [_pct(result["lags"][n], 99) for n in names],
                marker=".",
                label=f"{result['tables']} tables",
            )
        axes.set_ylabel("p99 s, commit → stored")
        axes.legend(fontsize=8)

    paths = save("lake", {"args": vars(args), "results": results}, draw, "freshness per table")
    print(f"\nwrote {paths[0]} and {paths[1]}")


if __name__ == "__main__":
    main()
