"""Object-store failures behind a Spark or Delta error, told apart by the Java exception
classes in its cause chain (S3A's translated exceptions), never by message text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from producer.errors import StorageAccessError, StorageNotFoundError, StorageUnavailableError
from schemas.errors import CdfBridgeError

# S3A raises these for 401/403 and for credentials it could not find or load.
_ACCESS = {
    "java.nio.file.AccessDeniedException",
    "org.apache.hadoop.fs.s3a.auth.NoAuthWithAWSException",
    "org.apache.hadoop.fs.s3a.CredentialInitializationException",
}
_NO_BUCKET = {"org.apache.hadoop.fs.s3a.UnknownStoreException"}
# The endpoint did not answer, or answered 5xx/throttled after S3A's own retries.
_UNAVAILABLE = {
    "java.net.ConnectException",
    "java.net.UnknownHostException",
    "java.net.SocketTimeoutException",
    "java.net.NoRouteToHostException",
    "org.apache.http.conn.HttpHostConnectException",
    "org.apache.http.conn.ConnectTimeoutException",
    "org.apache.hadoop.net.ConnectTimeoutException",
    "org.apache.hadoop.fs.s3a.AWSClientIOException",
    "org.apache.hadoop.fs.s3a.AWSApiCallTimeoutException",
    "org.apache.hadoop.fs.s3a.AWSStatus500Exception",
    "org.apache.hadoop.fs.s3a.AWSServiceThrottledException",
}
MAX_DEPTH = 30  # causes followed at most: Java chains can be long, never endless here


def storage_error(exc: BaseException, table: str, endpoint: str | None) -> CdfBridgeError | None:
    """exc as an error naming the store's problem and its fix; None when it is not one."""
    classes = set(java_classes(exc))
    where = endpoint or "AWS S3"
    if classes & _ACCESS:
        return StorageAccessError(table, where)
    if classes & _NO_BUCKET:
        return StorageNotFoundError(table, where)
    if classes & _UNAVAILABLE:
        return StorageUnavailableError(table, where, sorted(classes & _UNAVAILABLE)[0])
    return None


def java_classes(exc: BaseException) -> Iterator[str]:
    """Class names of every Java throwable behind exc: py4j's and pyspark's wrappers, and
    each one's getCause() chain, Python causes included."""
    from py4j.protocol import Py4JError

    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < MAX_DEPTH:
        throwable = _java_throwable(current)
        try:
            while throwable is not None and seen < MAX_DEPTH:
                yield str(throwable.getClass().getName())
                throwable, seen = throwable.getCause(), seen + 1
        except Py4JError:  # the JVM is gone: what it held cannot be asked any more
            return
        current, seen = current.__cause__ or current.__context__, seen + 1


def _java_throwable(exc: BaseException) -> Any:
    """The Java exception a Python one wraps: Py4JJavaError's, or pyspark's CapturedException's."""
    from py4j.protocol import Py4JJavaError

    if isinstance(exc, Py4JJavaError):
        return exc.java_exception
    return getattr(exc, "_origin", None)
