"""The secured stack's TLS proxy (nginx) from a checkout under a private directory (mode 0700,
as root's home and `mktemp -d` are): it answers for ClickHouse and the registry, reads its
password file, and a registry it cannot reach is named as the proxy's failure."""

from __future__ import annotations

import ssl
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from consumer.group.errors import NotPublishedYetError, RegistryUnavailableError
from consumer.group.registry import Schemas
from services.registry_errors import RegistryAccessError
from services.settings import SchemaRegistrySettings
from stack import services
from stack.credentials import REGISTRY_USER, Credentials
from stack.settings import StackSettings
from tests.conftest import free_port, unique
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def private_home() -> Iterator[Path]:
    """A stack home two levels below a 0700 directory, as a checkout under /root has."""
    top = Path(tempfile.mkdtemp(prefix="cdfbridge-private-"))
    assert top.stat().st_mode & 0o777 == 0o700
    yield top / "checkout" / ".stack"


def proxy(home: Path, endpoints: Endpoints, registry_port: int) -> Iterator[StackSettings]:
    """Only the TLS proxy of a secured stack kept in home, in front of the test stack's
    ClickHouse and of registry_port."""
    settings = StackSettings(
        home=home,
        lib_dir=StackSettings().lib,
        secure=True,
        clickhouse_http_port=_port(endpoints.clickhouse),
        registry_port=registry_port,
        clickhouse_https_port=free_port(),
        registry_https_port=free_port(),
    )
    services.up(settings, ["tls-proxy"])
    try:
        yield settings
    finally:
        services.down(settings, ["tls-proxy"])


@pytest.fixture(scope="module")
def secured(private_home: Path, endpoints: Endpoints) -> Iterator[StackSettings]:
    yield from proxy(private_home / "reaching", endpoints, _port(endpoints.registry))


@pytest.fixture(scope="module")
def stranded(private_home: Path, endpoints: Endpoints) -> Iterator[StackSettings]:
    """A proxy whose registry port nothing listens on."""
    yield from proxy(private_home / "stranded", endpoints, free_port())


def _port(url: str) -> int:
    port = urlparse(url).port
    assert port is not None, url
    return port


def schemas(settings: StackSettings, password: str) -> Schemas:
    credentials = Credentials(settings)
    registry = SchemaRegistrySettings(
        url=settings.registry_url,
        basic_auth_user_info=f"{REGISTRY_USER}:{password}",
        ssl_ca_location=str(credentials.ca_path),
    )
    return Schemas(registry.client_config())


def test_clickhouse_answers_through_the_proxy(secured: StackSettings) -> None:
    context = ssl.create_default_context(cafile=Credentials(secured).ca_path)
    url = f"{secured.clickhouse_url}/ping"
    with urllib.request.urlopen(url, timeout=10, context=context) as answer:  # noqa: S310
        assert answer.read() == b"Ok.\n"


def test_the_registry_answers_through_the_proxy_with_the_right_password(
    secured: StackSettings,
) -> None:
    right = schemas(secured, Credentials(secured).password("registry"))

    with pytest.raises(NotPublishedYetError):  # the registry's own 404 for a new subject
        right.latest_value(unique("topic"))


def test_a_wrong_password_is_refused_not_a_server_error(secured: StackSettings) -> None:
    with pytest.raises(RegistryAccessError, match="HTTP 401"):
        schemas(secured, "not-the-password").latest_value(unique("topic"))


def test_a_registry_the_proxy_cannot_reach_is_named_as_the_proxys_failure(
    stranded: StackSettings,
) -> None:
    password = Credentials(stranded).password("registry")

    with pytest.raises(RegistryUnavailableError, match="HTTP 502 .*proxy or gateway"):
        schemas(stranded, password).latest_value(unique("topic"))
