"""ClickHouse errors are sorted on clickhouse-connect's class and server code, never on the
text: a code mentioned in a message, or an HTTP status in it, decides nothing."""

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError, OperationalError

from schemas.errors import ConfigError
from services.clickhouse_errors import (
    BadDataError,
    ClickHouseUnavailableError,
    InsertError,
    classify,
)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (OperationalError("Error executing HTTP request"), ClickHouseUnavailableError),
        (
            OperationalError("HTTP driver received HTTP status 503", code=None),
            ClickHouseUnavailableError,
        ),
        (DatabaseError("Memory limit (total) exceeded", code=241), ClickHouseUnavailableError),
        (DatabaseError("Timeout exceeded", code=159), ClickHouseUnavailableError),
        (DatabaseError("Too many parts", code=252), ClickHouseUnavailableError),
        (DatabaseError("Expected end of line", code=117, name="INCORRECT_DATA"), BadDataError),
        (DatabaseError("Cannot parse input", code=27), BadDataError),
        (DatabaseError("Authentication failed", code=516), ConfigError),
        (DatabaseError("Not enough privileges", code=497, name="ACCESS_DENIED"), ConfigError),
        (DatabaseError("Table default.t does not exist", code=60), InsertError),
        # Text that looks like a code or a status: ignored.
        (DatabaseError("Code: 241. Memory limit exceeded", code=None), InsertError),
        (DatabaseError("HTTP driver received HTTP status 503", code=None), InsertError),
        (DatabaseError("Code: 27. while HTTP 502 from the proxy", code=60), InsertError),
        (DatabaseError("HTTP driver received HTTP status 404", code=None), InsertError),
    ],
    ids=lambda v: f"{type(v).__name__}-{getattr(v, 'code', None)}-{str(v)[:20]}",
)
def test_errors_are_sorted_by_class_and_code(error: DatabaseError, expected: type) -> None:
    found = classify(error)

    assert type(found) is expected


def test_bad_data_keeps_the_servers_code_for_isolation() -> None:
    found = classify(DatabaseError("Unknown schema id", code=1000))

    assert isinstance(found, BadDataError)
    assert found.code == 1000


def test_refused_credentials_name_the_settings() -> None:
    found = classify(DatabaseError("x", code=516, name="AUTHENTICATION_FAILED"), "http://ch:8123")

    assert "ClickHouse at http://ch:8123" in str(found)
    assert "CDFBRIDGE_CLICKHOUSE__USERNAME" in str(found)


def test_an_error_without_a_code_names_what_is_in_front_of_clickhouse() -> None:
    found = classify(DatabaseError("HTTP status 404", code=None), "http://ch:8123/x")

    assert "something in front of ClickHouse at http://ch:8123/x" in str(found)
