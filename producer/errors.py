"""What can stop the producer, each with the fix in its message. The services' failures it
shares with cdfbridge-verify are in services/: service_errors.py (Kafka, the registry, a Spark
master) and storage_errors.py (the object store)."""

from schemas.errors import (
    ConfigError,
    ServiceUnavailableError,
    TableConfigError,
    TerminalError,
    TransientError,
)

MAX_MESSAGE_SETTING = "CDFBRIDGE_KAFKA__MAX_MESSAGE_BYTES"


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


RESYNC = (
    "resync it: `cdfbridge-producer ... resync TABLE` publishes its state at the latest "
    "version into a new generation of its topic and follows changes from there; then "
    "`cdfbridge-consumer --topic TOPIC rebuild` rebuilds its ClickHouse table"
)


class VersionUnavailableError(TerminalError):
    def __init__(self, table: str, first: int, cause: str) -> None:
        super().__init__(
            f"changes of table {table} from version {first} are no longer available (CDF enabled "
            f"later, log retention or VACUUM: {cause}); before anything was published to the "
            "topic, start with --snapshot to publish the current state and follow changes from "
            f"there; after, {RESYNC}"
        )


class SchemaChangeError(TerminalError):
    def __init__(self, table: str, version: int, detail: str) -> None:
        super().__init__(
            f"table {table} changed its schema incompatibly at or before version {version} "
            f"({detail}); only added nullable columns are followed; {RESYNC}"
        )


class NullKeyError(TerminalError):
    def __init__(self, table: str, version: int, primary_key: list[str]) -> None:
        super().__init__(
            f"a change at version {version} of table {table} has a NULL primary key "
            f"({', '.join(primary_key)}); fix the row in the table or choose key columns that "
            "are never NULL"
        )


class DuplicateKeyError(TerminalError):
    def __init__(self, table: str, version: int, primary_key: list[str], key: str) -> None:
        super().__init__(
            f"the primary key ({', '.join(primary_key)}) of table {table} is not unique: "
            f"version {version} leaves two rows of the key {key}, and a replica keeps one per "
            "key; choose key columns that are unique in the table (--primary-key), or remove "
            "the duplicate rows, then resync"
        )


class FencedError(TerminalError):
    def __init__(self, transactional_id: str) -> None:
        super().__init__(
            f"another producer took over from this one (transactional.id {transactional_id}): "
            "it started with the same transactional.id, or follows a table this one follows. "
            "This one stops. Give each table to one producer deployment"
        )


class SparkDriverLostError(ServiceUnavailableError):
    def __init__(self, from_version: int | None, cause: str) -> None:
        reading = "" if from_version is None else f" while reading versions from {from_version}"
        super().__init__(
            f"the Spark driver JVM died or stopped answering{reading} ({cause}); its log "
            "above says why. If it ran out of memory "
            "(java.lang.OutOfMemoryError), give it more with --conf spark.driver.memory=4g or "
            "lower --max-bytes-per-chunk. Published progress is kept: a restart resumes after "
            "the last whole chunk"
        )


class WiderThanBoundError(TransientError):
    """A start's first chunk, read without a sample of its width, held a change wider than
    that read allowed (producer/read/width.py). Caught where the chunk is read, which
    samples the width and plans the chunk again: it never stops a table."""

    def __init__(self, table: str, bound: int) -> None:
        super().__init__(
            f"a change of {table}'s first chunk takes more than {bound} bytes: its row width "
            "is sampled and the chunk planned again"
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


class MessageTooLargeError(TerminalError):
    def __init__(self, topic: str, key: str, version: str, size: int | None, limit: str) -> None:
        what = f"a change of {size:,} bytes" if size is not None else "a change"
        super().__init__(
            f"{what} does not fit topic {topic} (key {key}, Delta version {version}): {limit}. "
            "The chunk was aborted: nothing of it is visible, and a restart resumes at it"
        )


def client_limit(max_message_bytes: int) -> str:
    """Why the producer refused a change as too large, and the fix."""
    return (
        f"the largest message is {MAX_MESSAGE_SETTING} = {max_message_bytes}; raise it on the "
        "producer, and on the topic (max.message.bytes) if it was created before"
    )


def topic_limit(topic: str, max_message_bytes: int) -> str:
    """Why the broker refused a change as too large, and the fix."""
    return (
        f"the topic's max.message.bytes is lower than {MAX_MESSAGE_SETTING} "
        f"({max_message_bytes}); raise it: kafka-configs --alter --entity-type topics "
        f"--entity-name {topic} --add-config max.message.bytes={max_message_bytes}"
    )


class TableRecreatedError(TerminalError):
    def __init__(self, table: str, topic: str, why: str) -> None:
        super().__init__(
            f"table {table} is not the table whose changes topic {topic} holds: {why}. It was "
            "dropped and created again, so its versions start over and the topic's are not "
            f"its own; to publish the new table into this topic, {RESYNC}"
        )


class TopicRecreatedError(TerminalError):
    def __init__(self, table: str, topic: str, why: str) -> None:
        super().__init__(
            f"topic {topic} is not the topic table {table} published to: {why}. It was "
            "deleted and created again, so the changes its progress records speak of are "
            f"gone from it, and a consumer replaying it would miss them; to publish the "
            f"table into it again, {RESYNC}"
        )


class LogReplacedError(TerminalError):
    """A path table's log is not the one followed any more (producer/follow/commit_log.py); the
    follow loop names the table and topic (TableRecreatedError)."""

    def __init__(self, why: str) -> None:
        self.why = why
        super().__init__(why)


class TopicClaimedError(ConfigError):
    def __init__(self, topic: str, table: str, other: str) -> None:
        super().__init__(
            f"topic {topic} holds the changes of another table, {other}; this producer follows "
            f"{table}. Give one of them a topic of its own (--topic, CDFBRIDGE_SOURCE__TOPIC "
            "or the [[tables]] entry's topic); the other table's producer was left alone"
        )


def fails_every_table(exc: BaseException) -> bool:
    """Fenced, a shared service that does not answer, or one that refuses the shared
    settings (bad credentials, say): what fails every table of a process alike."""
    if isinstance(exc, FencedError | TransientError):
        return True
    return isinstance(exc, ConfigError) and not isinstance(exc, TableConfigError)
