"""What can stop the producer, each with the fix in its message."""

from schemas.errors import ConfigError, ServiceUnavailableError, TerminalError

STORAGE_KEYS = "CDFBRIDGE_STORAGE__ACCESS_KEY_ID and __SECRET_ACCESS_KEY"


class TableNotFoundError(TerminalError):
    def __init__(self, table: str) -> None:
        super().__init__(
            f"no Delta table at {table}: check --table (a path/URI, or a catalog name such as "
            "db.table)"
        )


class ChangeFeedDisabledError(TerminalError):
    def __init__(self, table: str, sql_name: str) -> None:
        super().__init__(
            f"table {table} has no Change Data Feed; run ALTER TABLE {sql_name} SET TBLPROPERTIES "
            "(delta.enableChangeDataFeed = true), then start from a version after that, or use "
            "--snapshot"
        )


class VersionUnavailableError(TerminalError):
    def __init__(self, table: str, first: int, cause: str) -> None:
        super().__init__(
            f"changes of table {table} from version {first} are no longer available (CDF enabled "
            f"later, log retention or VACUUM: {cause}); restart with --snapshot to publish the "
            "current state and follow changes from there"
        )


class SchemaChangeError(TerminalError):
    def __init__(self, table: str, version: int, detail: str) -> None:
        super().__init__(
            f"table {table} changed its schema incompatibly at or before version {version} "
            f"({detail}); only added nullable columns are followed. Resync: publish to a new "
            "topic with --snapshot, then rebuild the ClickHouse table from it"
        )


class NullKeyError(TerminalError):
    def __init__(self, table: str, version: int, primary_key: list[str]) -> None:
        super().__init__(
            f"a change at version {version} of table {table} has a NULL primary key "
            f"({', '.join(primary_key)}); fix the row in the table or choose key columns that "
            "are never NULL"
        )


class FencedError(TerminalError):
    def __init__(self, transactional_id: str) -> None:
        super().__init__(
            f"another producer started with transactional.id {transactional_id} and took over "
            "this table's topic; this one stops. Run one producer per table and topic"
        )


class UnreachableError(ServiceUnavailableError):
    def __init__(self, service: str, where: str, attempts: int, cause: str) -> None:
        super().__init__(
            f"{service} at {where} did not answer after {attempts} attempts ({cause}); check "
            "that it runs and that the address in the settings is right"
        )


class SparkUnavailableError(ServiceUnavailableError):
    def __init__(self, master: str, attempts: int, cause: str) -> None:
        self.master = master
        super().__init__(
            f"Spark master {master} did not answer after {attempts} attempts ({cause}); check "
            "that the master runs and that this host reaches it, or fix --master "
            "(CDFBRIDGE_SPARK__MASTER; local[*] runs Spark in this process)"
        )


class SparkDriverLostError(ServiceUnavailableError):
    def __init__(self, from_version: int, cause: str) -> None:
        super().__init__(
            f"the Spark driver JVM died or stopped answering while reading versions from "
            f"{from_version} ({cause}); its log above says why. If it ran out of memory "
            "(java.lang.OutOfMemoryError), give it more with --conf spark.driver.memory=4g or "
            "lower --max-bytes-per-chunk. Published progress is kept: a restart resumes after "
            "the last whole chunk"
        )


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


class KafkaFatalError(TerminalError):
    def __init__(self, transactional_id: str, doing: str, reason: str) -> None:
        super().__init__(
            f"Kafka reported a fatal error to the producer of transactional.id {transactional_id} "
            f"while {doing} ({reason}); the open transaction is never visible to read_committed "
            "readers. Restart the producer: it resumes after the last whole chunk. If it "
            "happens again, check the brokers' logs and that the producer may use its "
            "transactional.id (Write and Describe on TransactionalId)"
        )


class KafkaRefusedError(TerminalError):
    def __init__(self, where: str, doing: str, reason: str) -> None:
        super().__init__(
            f"Kafka at {where} refused {doing} ({reason}); check the producer's ACLs and the "
            "topic's settings, then restart it: it resumes after the last whole chunk"
        )


class KafkaUnavailableError(ServiceUnavailableError):
    def __init__(self, where: str, doing: str, reason: str) -> None:
        super().__init__(
            f"Kafka at {where} failed while {doing} ({reason}); check that its brokers run and "
            "that CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS is right. A restart resumes after the last "
            "whole chunk"
        )


class MessageTooLargeError(TerminalError):
    def __init__(self, topic: str, key: str, version: str, size: int | None, limit: str) -> None:
        what = f"a change of {size:,} bytes" if size is not None else "a change"
        super().__init__(
            f"{what} does not fit topic {topic} (key {key}, Delta version {version}): {limit}. "
            "The chunk was aborted: nothing of it is visible, and a restart resumes at it"
        )
