"""The registry's answers are sorted on the HTTP status and the registry's error code: the
registry's own "not found", a URL that is no registry, refused credentials, a server that
is down, and requests it refuses."""

import pytest
from confluent_kafka.schema_registry.error import SchemaRegistryError

from services.registry_errors import (
    RegistryAccessError,
    RegistryUrlError,
    failure_cause,
    misconfigured,
    not_found,
    refused,
    unavailable,
)

URL = "http://registry:8080"
R = SchemaRegistryError


@pytest.mark.parametrize(
    ("answer", "found", "down", "wrong"),
    [
        (R(404, 40401, "Subject 'orders-value' not found."), True, False, None),
        (R(404, 40402, "Version 9 not found."), True, False, None),
        (R(404, 40403, "Schema 77 not found."), True, False, None),
        (R(404, None, None), False, False, RegistryUrlError),  # type: ignore[arg-type]
        (R(404, -1, "HTTP 404 Not Found"), False, False, RegistryUrlError),
        (R(401, 40101, "Unauthorized"), False, False, RegistryAccessError),
        (R(403, 40301, "User cannot access the resource."), False, False, RegistryAccessError),
        (R(500, 50001, "Error in the backend datastore"), False, True, None),
        (R(503, -1, "Service Unavailable"), False, True, None),
        (R(429, -1, "Too Many Requests"), False, True, None),
        (R(-1, -1, "Unknown error"), False, True, None),
        (R(409, 409, "Schema being registered is incompatible"), False, False, None),
        (R(422, 42201, "Invalid schema"), False, False, None),
    ],
    ids=lambda v: f"{v.http_status_code}-{v.error_code}" if isinstance(v, R) else str(v),
)
def test_registry_answers_are_sorted_by_status_and_code(
    answer: SchemaRegistryError, found: bool, down: bool, wrong: type | None
) -> None:
    assert not_found(answer) is found
    assert unavailable(answer) is down
    assert type(misconfigured(answer, URL)) is (wrong or type(None))


def test_a_url_that_is_no_registry_names_the_setting_and_apicurios_path() -> None:
    message = str(misconfigured(R(404, -1, "Not Found"), URL))

    assert "CDFBRIDGE_SCHEMA_REGISTRY__URL" in message
    assert "/apis/ccompat/v7" in message


@pytest.mark.parametrize("status", [401, 403])
def test_refused_access_names_the_credentials_setting(status: int) -> None:
    message = str(misconfigured(R(status, status * 100 + 1, "no"), URL))

    assert "CDFBRIDGE_SCHEMA_REGISTRY__BASIC_AUTH_USER_INFO" in message
    assert URL in message


def test_a_refused_request_names_it_with_status_and_code() -> None:
    message = str(refused(R(422, 42201, "Invalid schema"), URL, "registering orders-value"))

    assert (
        "refused registering orders-value (HTTP 422, registry code 42201: Invalid schema)"
        in message
    )


def test_a_server_error_without_a_registry_code_is_named_as_a_proxys_failure() -> None:
    assert "proxy or gateway" in failure_cause(R(502, -1, "<html>502 Bad Gateway</html>"))
    assert "proxy" not in failure_cause(R(500, 50001, "Error in the backend datastore"))
