"""The schema registry's answers sorted on a SchemaRegistryError's HTTP status and registry
error code, never on its text. Both stages ask the registry through the same client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from schemas.errors import ConfigError, TerminalError

if TYPE_CHECKING:
    from confluent_kafka.schema_registry.error import SchemaRegistryError

# The registry's own "no such thing": subject, version or schema id not found.
NOT_FOUND_CODES = frozenset({40401, 40402, 40403})
URL = "CDFBRIDGE_SCHEMA_REGISTRY__URL"
CREDENTIALS = "CDFBRIDGE_SCHEMA_REGISTRY__BASIC_AUTH_USER_INFO"


class RegistryAccessError(ConfigError):
    def __init__(self, url: str, status: int, detail: str) -> None:
        refused = "refused the credentials" if status == 401 else "denied the permission"
        super().__init__(
            f"the schema registry at {url} {refused} (HTTP {status}: {detail}); check "
            f"{CREDENTIALS} (user:password) and that this user may read and register the "
            "topic's subjects"
        )


class RegistryUrlError(ConfigError):
    def __init__(self, url: str) -> None:
        super().__init__(
            f"{url} answered 404 Not Found without a registry error code: it is not the base "
            "URL of a Confluent-compatible schema registry API. Fix "
            f"{URL}: Apicurio's ends in /apis/ccompat/v7 (e.g. "
            "http://registry:8080/apis/ccompat/v7), Confluent's is the server's root"
        )


class RegistryRefusedError(TerminalError):
    def __init__(self, url: str, doing: str, status: int, code: int, detail: str) -> None:
        super().__init__(
            f"the schema registry at {url} refused {doing} (HTTP {status}, registry code "
            f"{code}: {detail}); fix the request it names or the registry's settings"
        )


def not_found(exc: SchemaRegistryError) -> bool:
    """The registry says the subject, version or schema id does not exist."""
    return exc.http_status_code == 404 and exc.error_code in NOT_FOUND_CODES


def unavailable(exc: SchemaRegistryError) -> bool:
    """A later attempt may succeed: a server error, a timeout or throttling, or no HTTP
    answer at all (the client's negative status)."""
    status = exc.http_status_code
    return status >= 500 or status < 0 or status in (408, 429)


def failure_cause(exc: SchemaRegistryError) -> str:
    """What a failed answer says. A server error without a registry error code did not come
    from the registry: a proxy or gateway in front of it answered (nginx's 500 or 502 page)."""
    status = exc.http_status_code
    if status >= 500 and exc.error_code == type(exc).UNKNOWN:
        return (
            f"HTTP {status} without a registry error code: a proxy or gateway in front of the "
            "registry failed; its error log says why (it may not reach the registry, or not "
            "read its own files)"
        )
    return str(exc)


def misconfigured(exc: SchemaRegistryError, url: str) -> ConfigError | None:
    """Refused credentials or permissions, or a URL that is no registry; None otherwise."""
    status = exc.http_status_code
    if status in (401, 403):
        # Without a registry error code, the body is not the registry's (often a proxy's page).
        own = exc.error_code != type(exc).UNKNOWN
        return RegistryAccessError(
            url, status, str(exc.error_message) if own else "no registry body"
        )
    if status == 404 and not not_found(exc):
        return RegistryUrlError(url)
    return None


def refused(exc: SchemaRegistryError, url: str, doing: str) -> RegistryRefusedError:
    return RegistryRefusedError(
        url, doing, exc.http_status_code, exc.error_code, str(exc.error_message)
    )
