"""docker-compose.yml is checked without a Docker engine: structure, health, and env vars."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from consumer.settings import ConsumerSettings
from producer.settings import ProducerSettings
from services.settings import env_vars
from verify.settings import VerifySettings

COMPOSE = Path(__file__).parents[2] / "docker-compose.yml"
OURS = {"demo-data", "producer", "consumer", "kafka-engine", "verify", "verify-watch"}
ONE_SHOT = {"verify"}  # runs once and exits: nothing to health-check


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())["services"]
    return loaded


def test_compose_runs_the_stack_and_both_stages(services: dict[str, Any]) -> None:
    assert set(services) == {"kafka", "registry", "clickhouse", "minio", *OURS}


@pytest.mark.parametrize(
    ("service", "image"),
    [
        ("kafka", "apache/kafka:4.1"),
        ("registry", "apicurio/apicurio-registry:3"),
        ("clickhouse", "clickhouse/clickhouse-server:26.9"),
        ("minio", "quay.io/minio/minio:RELEASE."),
    ],
)
def test_services_use_official_images_with_pinned_versions(
    services: dict[str, Any], service: str, image: str
) -> None:
    assert services[service]["image"].startswith(image)


def test_every_service_has_a_healthcheck(services: dict[str, Any]) -> None:
    missing = [
        name
        for name, spec in services.items()
        if name not in ONE_SHOT and not spec.get("healthcheck", {}).get("test")
    ]
    assert missing == []


def test_our_services_build_from_the_dockerfile_and_wait_for_healthy_dependencies(
    services: dict[str, Any],
) -> None:
    for name in OURS:
        assert services[name]["build"] == {"context": ".", "args": ["EXTRA_CA_CERT"]}
        assert services[name]["image"] == "cdfbridge:local"
    for name in ("producer", "consumer", "kafka-engine", "verify-watch"):
        spec = services[name]
        assert spec["depends_on"], name
        for dependency, condition in spec["depends_on"].items():
            assert dependency in services
            assert condition == {"condition": "service_healthy"}


def test_verify_runs_once_the_demo_table_stops_changing(services: dict[str, Any]) -> None:
    needs = services["verify"]["depends_on"]
    assert needs["demo-data"] == {"condition": "service_completed_successfully"}
    assert "--commits" in services["demo-data"]["command"]


def test_ports_are_published_on_loopback_only(services: dict[str, Any]) -> None:
    published = [port for spec in services.values() for port in spec.get("ports", [])]
    assert published
    assert all(str(port).startswith("127.0.0.1:") for port in published)


def test_every_env_var_set_for_our_services_is_read_by_the_code(
    services: dict[str, Any],
) -> None:
    read = {
        "demo-data": set(),
        "producer": set(env_vars(ProducerSettings)),
        "consumer": set(env_vars(ConsumerSettings)),
        "kafka-engine": set(env_vars(ConsumerSettings)),
        "verify": set(env_vars(VerifySettings)),
        "verify-watch": set(env_vars(VerifySettings)),
    }
    for name in OURS:
        unread = set(services[name].get("environment", {})) - read[name]
        assert unread == set(), f"{name} sets env vars the code ignores: {sorted(unread)}"


def test_the_local_override_swaps_only_third_party_images_and_leaves_ours_as_they_run() -> None:
    class ComposeLoader(yaml.SafeLoader):
        """Knows compose's `!reset` (drop what the base file sets)."""

    ComposeLoader.add_constructor("!reset", lambda loader, node: None)
    text = (COMPOSE.parent / "stack/docker/compose.local.yml").read_text()
    override = yaml.load(text, Loader=ComposeLoader)  # noqa: S506 - a SafeLoader subclass
    swapped = override["services"]
    for name in ("kafka", "registry", "clickhouse"):
        assert swapped[name]["image"] == "cdfbridge/stack-services:local"
        assert swapped[name]["command"] == ["cdfbridge-stack", "serve", name]
    for name in OURS:
        # Only where the image comes from: no command, environment or volume of their own.
        assert set(swapped[name]) == {"pull_policy", "build"}, name
        assert swapped[name]["build"] == {"args": {"BASE": "cdfbridge/python:3.11-local"}}
