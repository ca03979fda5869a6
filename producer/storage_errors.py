"""Object-store failures behind a Spark or Delta error, told apart by the Java exception
classes in its cause chain (S3A's translated exceptions), never by message text."""

from __future__ import annotations

from producer.errors import StorageAccessError, StorageNotFoundError, StorageUnavailableError
from producer.spark_errors import java_classes
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
