"""A Delta table on Azure storage (the Azure Storage emulator, Azurite): delta-rs writes it,
the producer reads it through ABFS with hadoop-azure from the stack's jar set, and
`cdfbridge-verify` reads it back with delta-rs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from consumer.group.loop import Pipeline
from stack.azure import ACCOUNT, ACCOUNT_KEY
from stack.generate import Generator
from stack.settings import StackSettings
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_object_storage import EVERY_KIND, finished, producer, verify

pytestmark = [pytest.mark.integration, pytest.mark.spark]

# delta-rs reaches the emulator at its default address, 127.0.0.1:10000.
EMULATOR = {"AZURE_STORAGE_USE_EMULATOR": "true"}


@pytest.fixture(scope="module")
def azurite() -> Iterator[StackSettings]:
    from stack import services
    from stack.azure import Azure

    settings = StackSettings()
    started = not Azure(settings).status().ready
    services.up(settings, ["azure"])
    yield settings
    if started:
        services.down(settings, ["azure"])


def abfs_conf(settings: StackSettings) -> list[str]:
    """ABFS in Blob mode against the emulator (its DFS endpoint is not emulated)."""
    conf = {
        f"spark.hadoop.fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net": ACCOUNT_KEY,
        "spark.hadoop.fs.azure.abfs.endpoint": f"127.0.0.1:{settings.azure_port}",
        "spark.hadoop.fs.azure.always.use.https": "false",
        "spark.hadoop.fs.azure.fns.account.service.type": "BLOB",
    }
    return [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]


def test_an_adls_table_replicates_and_verify_reads_it_back(
    endpoints: Endpoints, azurite: StackSettings, ch_database: str
) -> None:
    name, topic = f"table_{uuid.uuid4().hex[:10]}", unique("cdc")
    generator = Generator(f"az://{azurite.azure_container}/{name}", 7, EMULATOR)
    last = max(generator.commit(operation, 200) for operation in EVERY_KIND)
    uri = f"abfs://{azurite.azure_container}@{ACCOUNT}.dfs.core.windows.net/{name}"

    code, errors = finished(
        producer(endpoints, None, uri, topic, "--until-version", str(last), *abfs_conf(azurite))
    )
    assert code == 0, errors
    Pipeline(consumer_settings(endpoints, topic, ch_database), until_caught_up=True).run()

    delta_rs_uri = f"az://{azurite.azure_container}/{name}"
    option = "AZURE_STORAGE_USE_EMULATOR=true"
    assert verify(endpoints, None, delta_rs_uri, topic, ch_database, "--storage-option", option)
