"""Every metric the shipped dashboard and alert rules name (monitoring/) is exported by a
running producer, consumer, Kafka-engine watch or verify watcher, and the freshness
metrics carry the Delta commit time of what was written."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY, generate_latest

from consumer.group.loop import Pipeline
from consumer.kafka_engine.watch import EngineWatch
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_many_tables import _wait_for
from tests.producer_helpers import change_every_way, publish
from verify.settings import VerifySettings
from verify.watch import Watch

pytestmark = [pytest.mark.integration, pytest.mark.spark]

MONITORING = Path(__file__).parents[2] / "monitoring"
NAME = re.compile(r"\bcdfbridge_[a-z_]+")
SUFFIXES = re.compile(r"_(bucket|sum|count|total|created)$")


def named() -> set[str]:
    """The metric families the dashboard's queries and the rules' expressions name."""
    rules = yaml.safe_load((MONITORING / "prometheus-rules.yml").read_text())
    exprs = [rule["expr"] for group in rules["groups"] for rule in group["rules"]]
    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    exprs += [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    return {SUFFIXES.sub("", name) for expr in exprs for name in NAME.findall(expr)}


def exported(*registries: Any) -> set[str]:
    text = "".join(generate_latest(r).decode() for r in registries)
    return {
        SUFFIXES.sub("", line.split()[2]) for line in text.splitlines() if line.startswith("# TYPE")
    }


def test_every_metric_the_dashboard_and_the_rules_name_is_exported(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str
) -> None:
    path = str(tmp_path / "people")
    change_every_way(spark, path)
    topic = publish(spark, endpoints, path, "id", until_version=4)  # the producer's REGISTRY
    group = unique("group")
    into = consumer_settings(endpoints, topic, ch_database, group=group)
    pipeline = Pipeline(into, until_caught_up=True)
    pipeline.run()
    settings = VerifySettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        clickhouse={"url": endpoints.clickhouse, "database": ch_database},
        verify={"table": path, "topic": topic, "group": group, "metrics_port": 0},
    )
    watch = Watch(settings)
    watcher = threading.Thread(target=watch.run)
    watcher.start()
    try:
        table = {"table": watch.tables[0].name}
        found = watch.metrics.registry.get_sample_value
        _wait_for(
            lambda: (
                found("cdfbridge_verify_version", table) == 4
                and found("cdfbridge_verify_lag_seconds", table) is not None
            ),
            "a round, and a look at what came after it",
        )
    finally:
        watch.stop.set()
        watcher.join(60)
    engine = EngineWatch(into, group, 1)
    registries = (REGISTRY, pipeline.metrics.registry, watch.metrics.registry, engine.registry)

    missing = named() - exported(*registries)
    assert not missing, f"named in monitoring/ but exported by no process: {sorted(missing)}"

    consumer = pipeline.metrics.registry
    age = consumer.get_sample_value(
        "cdfbridge_consumer_topic_newest_row_age_seconds", {"topic": topic}
    )
    observed = consumer.get_sample_value(
        "cdfbridge_consumer_topic_freshness_seconds_count", {"topic": topic}
    )
    assert age is not None and 0 <= age < 600, "the newest row was committed minutes ago"
    assert observed, "each batch written observes its oldest change's freshness"
    proof_age = watch.metrics.registry.get_sample_value(
        "cdfbridge_verify_age_seconds", {"table": watch.tables[0].name}
    )
    assert proof_age == 0, "the round was made at the table's latest version"
