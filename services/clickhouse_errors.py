"""ClickHouse's errors sorted on clickhouse-connect's structured fields, never on their text,
wherever cdfbridge calls it (the consumer's inserts and table set-up, cdfbridge-verify).

- A TLS failure behind it (an untrusted certificate, another host's): a setting, stop.
- `OperationalError`: no answer, or HTTP 429, 503 or 504 (clickhouse-connect raises those
  as OperationalError), or 502 from a proxy in front of ClickHouse (`GATEWAY_RETRIES` makes
  urllib3 raise that one as a transport error): retry.
- `code`, the server's error code (its X-ClickHouse-Exception-Code header): a retry can get
  past it, the data is bad (isolate the messages), the credentials are refused (a setting),
  or anything else (stop).
- No code and not an OperationalError: something in front of ClickHouse refused the
  request (HTTP 401, 403, 404 ...): stop and name the URL.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from clickhouse_connect.driver.exceptions import DatabaseError, OperationalError
from urllib3.util.retry import Retry

from schemas.errors import CdfBridgeError, ConfigError, ServiceUnavailableError, TerminalError
from services.tls_errors import TlsError, tls_failure

# Server error codes that a retry of the same insert can get past.
TRANSIENT_CODES = frozenset({159, 164, 202, 203, 209, 210, 241, 242, 252, 279, 425, 999})
# Codes of an insert whose data ClickHouse could not read or store.
DATA_CODES = frozenset({6, 27, 32, 33, 36, 38, 41, 43, 53, 69, 70, 72, 86, 117, 321, 407, 1000})
# ClickHouse could not fetch a schema from the registry: poison only if the id is unknown.
REGISTRY_FETCH_CODES = frozenset({86, 1000})
# UNKNOWN_USER, WRONG_PASSWORD, REQUIRED_PASSWORD, ACCESS_DENIED, AUTHENTICATION_FAILED.
ACCESS_CODES = frozenset({192, 193, 194, 497, 516})
# clickhouse-connect's HTTP retries (one more attempt on a failed connection, as its default
# of 1), except that a 502 Bad Gateway is raised by urllib3 as a transport error at once,
# which clickhouse-connect turns into an OperationalError. It never resends a request.
GATEWAY_RETRIES = Retry(
    total=1, read=0, status=0, status_forcelist=(502,), allowed_methods=None, raise_on_status=True
)
CREDENTIALS = "CDFBRIDGE_CLICKHOUSE__USERNAME and __PASSWORD"


class ClickHouseUnavailableError(ServiceUnavailableError):
    """ClickHouse did not answer, or answered that it is overloaded: retry later."""


class BadDataError(TerminalError):
    """ClickHouse rejected an insert because of its data: isolate the bad messages."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class InsertError(TerminalError):
    """ClickHouse refused an insert for a reason that is not the data (e.g. a dropped table)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def classify(exc: DatabaseError, url: str | None = None) -> CdfBridgeError:
    """exc as one of our errors, decided by its class and its server error code."""
    code, where = exc.code, f"ClickHouse at {url}" if url else "ClickHouse"
    failure = tls_failure(exc)
    if failure is not None:
        return TlsError("ClickHouse", url or "CDFBRIDGE_CLICKHOUSE__URL", "clickhouse", failure)
    if isinstance(exc, OperationalError) or code in TRANSIENT_CODES:
        return ClickHouseUnavailableError(f"{where} is unavailable (code {code}): {exc}")
    if code in DATA_CODES:
        return BadDataError(f"ClickHouse rejected the data (code {code}): {exc}", code)
    if code in ACCESS_CODES:
        return ConfigError(
            f"{where} refused the credentials or the permission ({exc.name}, code "
            f"{code}); check {CREDENTIALS} and the user's grants"
        )
    if code is None:
        return InsertError(
            f"something in front of {where} refused the request, without a "
            f"ClickHouse error code ({exc}); check CDFBRIDGE_CLICKHOUSE__URL and any proxy "
            "on the way"
        )
    return InsertError(f"ClickHouse refused the insert (code {code}, {exc.name}): {exc}", code)


@contextmanager
def sorted_errors(url: str | None = None) -> Iterator[None]:
    """ClickHouse's errors raised inside come out as ours (`classify`): wherever our code
    calls clickhouse-connect."""
    try:
        yield
    except DatabaseError as exc:
        raise classify(exc, url) from exc
