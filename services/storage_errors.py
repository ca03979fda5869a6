"""Object-store failures behind a Spark or Delta error, told apart by the Java exception
classes in its cause chain (S3A's translated exceptions), never by message text. The producer
and cdfbridge-verify's Spark reader name them alike."""

from __future__ import annotations

from schemas.errors import CdfBridgeError, ConfigError, ServiceUnavailableError, TerminalError
from services.spark_errors import java_classes

STORAGE_KEYS = "CDFBRIDGE_STORAGE__ACCESS_KEY_ID and __SECRET_ACCESS_KEY"

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


class StorageAccessError(ConfigError):
    def __init__(self, table: str, endpoint: str) -> None:
        super().__init__(
            f"the object store at {endpoint} refused access to {table} (wrong or missing "
            f"credentials, or no permission); check [storage] access_key_id and "
            f"secret_access_key ({STORAGE_KEYS}; unset, the default AWS credential chain is "
            "used) and that they may list and read the table's bucket"
        )


class StorageNotFoundError(TerminalError):
    def __init__(self, table: str, endpoint: str) -> None:
        super().__init__(
            f"the bucket of {table} does not exist at {endpoint}; check --table, and "
            "[storage] endpoint (CDFBRIDGE_STORAGE__ENDPOINT) and region"
        )


class StorageUnavailableError(ServiceUnavailableError):
    def __init__(self, table: str, endpoint: str, cause: str) -> None:
        super().__init__(
            f"the object store at {endpoint} did not answer for {table} after retries ({cause}); "
            "check that it runs and that [storage] endpoint (CDFBRIDGE_STORAGE__ENDPOINT) is "
            "right. Published progress is kept: a restart resumes after the last whole chunk"
        )


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
