"""What a user sees when the object store refuses, lacks or hides the table: one line that
names the setting to fix, the documented exit code, and never a secret."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from tests.conftest import free_port, unique
from tests.endpoints import Endpoints, ObjectStore
from tests.integration.test_object_storage import finished, producer, run_verify, write

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture(scope="module")
def s3_table(object_store: ObjectStore) -> str:
    uri = object_store.uri()
    write(object_store, uri, ("insert",), rows=10)
    return uri


def run_producer(endpoints: Endpoints, store: ObjectStore, uri: str) -> tuple[int, str]:
    return finished(producer(endpoints, store, uri, unique("cdc"), "--until-version", "1"))


def test_wrong_credentials_exit_2_naming_the_keys_and_never_the_secret(
    endpoints: Endpoints, object_store: ObjectStore, s3_table: str
) -> None:
    wrong = SecretStr(f"not-the-secret-{unique('x')}")
    store = object_store.with_storage(secret_access_key=wrong)

    code, errors = run_producer(endpoints, store, s3_table)

    assert code == 2, errors
    assert "refused access" in errors
    assert "CDFBRIDGE_STORAGE__ACCESS_KEY_ID" in errors
    assert wrong.get_secret_value() not in errors
    assert "Traceback" not in errors


def test_a_missing_bucket_exits_1_naming_the_bucket(
    endpoints: Endpoints, object_store: ObjectStore
) -> None:
    uri = f"s3a://{unique('nobucket').replace('_', '-')}/table"

    code, errors = run_producer(endpoints, object_store, uri)

    assert code == 1, errors
    assert "does not exist" in errors
    assert "Traceback" not in errors


def test_no_delta_table_at_the_path_exits_1(
    endpoints: Endpoints, object_store: ObjectStore
) -> None:
    code, errors = run_producer(endpoints, object_store, object_store.uri("missing"))

    assert code == 1, errors
    assert "no Delta table at s3a://" in errors
    assert "Traceback" not in errors


def test_an_endpoint_that_does_not_answer_exits_3_naming_the_endpoint(
    endpoints: Endpoints, object_store: ObjectStore, s3_table: str
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    store = object_store.with_storage(endpoint=nowhere)

    code, errors = run_producer(endpoints, store, s3_table)

    assert code == 3, errors
    assert f"object store at {nowhere} did not answer" in errors
    assert "Traceback" not in errors


def test_verify_names_a_store_it_cannot_read_and_never_the_secret(
    endpoints: Endpoints,
    object_store: ObjectStore,
    s3_table: str,
    clickhouse: Any,
    ch_database: str,
) -> None:
    clickhouse.command(  # as the consumer makes it, enough for verify to reach the table
        f"CREATE TABLE `{ch_database}`.people (id String, _version UInt64 MATERIALIZED 0, "
        "_is_deleted UInt8 MATERIALIZED 0) ENGINE = MergeTree ORDER BY id"
    )
    wrong = SecretStr(f"not-the-secret-{unique('x')}")
    store = object_store.with_storage(secret_access_key=wrong)

    done = run_verify(
        endpoints,
        store,
        ch_database,
        "--table",
        s3_table,
        "--version",
        "1",
        "--clickhouse-table",
        "people",
    )

    assert done.returncode == 1, done.stdout + done.stderr
    assert "cannot be read from its object store" in done.stderr
    assert "CDFBRIDGE_STORAGE__" in done.stderr
    assert wrong.get_secret_value() not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
