"""Bad input stops the producer with a message naming the problem and the fix."""

import json
import os
from pathlib import Path
from typing import Any

import pytest

from producer.errors import (
    ChangeFeedDisabledError,
    DuplicateKeyError,
    NullKeyError,
    SchemaChangeError,
    TableNotFoundError,
    VersionUnavailableError,
)
from schemas.avro import SchemaMappingError
from tests.conftest import free_port
from tests.endpoints import Endpoints
from tests.producer_helpers import (
    PEOPLE,
    append,
    changes,
    create_table,
    publish,
    read_topic,
    without_delta_jars,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_table_without_change_feed_names_the_alter_table(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    create_table(spark, delta_path, cdf=False)

    with pytest.raises(ChangeFeedDisabledError, match=r"ALTER TABLE delta\.`.*` SET TBLPROPERTIES"):
        publish(spark, endpoints, delta_path, "id", until_version=0)


def test_relative_table_path_is_checked_and_named_absolute(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    create_table(spark, delta_path, cdf=False)
    relative = os.path.relpath(delta_path)  # from the working directory Spark shares

    with pytest.raises(ChangeFeedDisabledError, match=rf"ALTER TABLE delta\.`{delta_path}`"):
        publish(spark, endpoints, relative, "id", until_version=0)


def test_unknown_table_is_named(spark: Any, endpoints: Endpoints, tmp_path: Any) -> None:
    missing = str(tmp_path / "nothing_here")

    with pytest.raises(TableNotFoundError, match="nothing_here"):
        publish(spark, endpoints, missing, "id", until_version=0)


def test_missing_primary_key_column_lists_the_table_columns(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    create_table(spark, delta_path)
    append(spark, delta_path, [("1", "a", 1)])

    with pytest.raises(SchemaMappingError, match=r"\['user_id'\].*'age', 'id', 'name'"):
        publish(spark, endpoints, delta_path, "user_id", until_version=1)


def test_null_key_names_its_commit_version(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    create_table(spark, delta_path)
    append(spark, delta_path, [("1", "a", 1)])
    append(spark, delta_path, [(None, "b", 2)])

    with pytest.raises(NullKeyError, match="at version 2 .* NULL primary key"):
        publish(spark, endpoints, delta_path, "id", until_version=2)


@pytest.mark.parametrize("snapshot", [False, True], ids=["a commit", "a snapshot"])
def test_a_primary_key_that_is_not_unique_stops_the_table_naming_a_key(
    spark: Any, endpoints: Endpoints, delta_path: str, snapshot: bool
) -> None:
    create_table(spark, delta_path)
    append(spark, delta_path, [(str(i % 900), f"n{i}", i) for i in range(1_000)])  # 900 ids

    with pytest.raises(DuplicateKeyError, match=r"\(id\) of table .* version 1 .*key id='\d+'"):
        publish(spark, endpoints, delta_path, "id", until_version=1, snapshot=snapshot)


def test_versions_from_before_the_feed_was_enabled_suggest_snapshot(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    create_table(spark, delta_path, cdf=False)
    append(spark, delta_path, [("1", "a", 1)])
    spark.sql(
        f"ALTER TABLE delta.`{delta_path}` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    append(spark, delta_path, [("2", "b", 2)])

    with pytest.raises(VersionUnavailableError, match="--snapshot"):
        publish(spark, endpoints, delta_path, "id", starting_version=0, until_version=3)


def test_a_next_version_cleaned_up_behind_a_checkpoint_stops_the_table_and_skips_nothing(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    """Log retention deletes the commit files before a checkpoint. When the next version to
    publish is the last one deleted, every later commit file is still there: the read must
    refuse the range, not publish the later versions and leave that one out."""
    create_table(spark, delta_path)
    spark.sql(f"ALTER TABLE delta.`{delta_path}` SET TBLPROPERTIES (delta.checkpointInterval = 4)")
    for n in range(1, 5):  # versions 2-5, a checkpoint at 4
        append(spark, delta_path, [(str(n), f"p{n}", n)])
    topic = publish(spark, endpoints, delta_path, "id", until_version=2)
    log = os.path.join(delta_path, "_delta_log")
    assert os.path.exists(os.path.join(log, f"{4:020d}.checkpoint.parquet"))
    os.remove(os.path.join(log, f"{3:020d}.json"))  # as the log's cleanup would, behind 4

    with pytest.raises(VersionUnavailableError, match="from version 3 are no longer available"):
        publish(spark, endpoints, delta_path, "id", topic=topic, until_version=5)

    assert [change[2] for change in changes(read_topic(endpoints, topic), "id")] == [2]


def test_a_data_file_deleted_behind_the_log_stops_the_table_and_skips_nothing(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    """A commit's data file deleted by hand (or by a VACUUM with too short a retention): the
    file read plans its scan without listing the file, so it is the read that finds it
    gone, named as versions no longer available, as Delta's reader names it."""
    create_table(spark, delta_path)
    append(spark, delta_path, [("1", "a", 1)])
    topic = publish(spark, endpoints, delta_path, "id", until_version=1)
    append(spark, delta_path, [("2", "b", 2)])
    log = Path(delta_path, "_delta_log", f"{2:020d}.json").read_text().splitlines()
    added = [line for line in log if '"add"' in line]
    assert len(added) == 1
    name = json.loads(added[0])["add"]["path"]
    os.remove(os.path.join(delta_path, name))

    with pytest.raises(VersionUnavailableError):
        publish(spark, endpoints, delta_path, "id", topic=topic, until_version=2)

    assert [change[2] for change in changes(read_topic(endpoints, topic), "id")] == [1]


def test_snapshot_publishes_current_state_then_follows_changes(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    create_table(spark, delta_path, cdf=False)
    append(spark, delta_path, [("1", "a", 1), ("2", "b", 2)])
    spark.sql(
        f"ALTER TABLE delta.`{delta_path}` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    append(spark, delta_path, [("3", "c", 3)])  # version 3

    topic = publish(
        spark, endpoints, delta_path, "id", snapshot=True, starting_version=2, until_version=3
    )

    assert changes(read_topic(endpoints, topic), "id") == [
        ("1", "snapshot", 2),
        ("2", "snapshot", 2),
        ("3", "insert", 3),
    ]


def test_added_nullable_column_evolves_the_schema_and_publishing_continues(
    spark: Any, endpoints: Endpoints, delta_path: str, registry: Any
) -> None:
    create_table(spark, delta_path)
    append(spark, delta_path, [("1", "a", 1)])
    spark.sql(f"ALTER TABLE delta.`{delta_path}` ADD COLUMNS (email STRING)")
    append(spark, delta_path, [("2", "b", 2, "b@x")], PEOPLE + ", email STRING")

    topic = publish(spark, endpoints, delta_path, "id", until_version=1)
    publish(spark, endpoints, delta_path, "id", topic=topic, until_version=3)

    assert changes(read_topic(endpoints, topic), "id", "email") == [
        ("1", None, "insert", 1),
        ("2", "b@x", "insert", 3),
    ]
    assert len(registry.get_versions(f"{topic}-value")) == 2


def test_retyped_column_stops_with_a_resync_hint(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    create_table(spark, delta_path)
    append(spark, delta_path, [("1", "a", 1)])
    topic = publish(spark, endpoints, delta_path, "id", until_version=1)
    retyped = spark.createDataFrame([("1", "a", "one")], "id STRING, name STRING, age STRING")
    retyped.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(
        delta_path
    )

    with pytest.raises(SchemaChangeError, match="resync it: `cdfbridge-producer ... resync"):
        publish(spark, endpoints, delta_path, "id", topic=topic, until_version=2)


def test_a_change_feed_across_a_type_change_and_back_is_refused_by_its_condition(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    create_table(spark, delta_path)
    append(spark, delta_path, [("1", "a", 1)])
    for columns, age in (("id STRING, name STRING, age STRING", "one"), (PEOPLE, 2)):
        rows = spark.createDataFrame([("1", "a", age)], columns).write.format("delta")
        rows.mode("overwrite").option("overwriteSchema", "true").save(delta_path)

    # Same schema at both ends: only Delta's DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_SCHEMA_CHANGE
    # tells that versions 1-3 cannot be read as one range.
    with pytest.raises(SchemaChangeError, match="at or before version 3 .*INCOMPATIBLE_SCHEMA"):
        publish(spark, endpoints, delta_path, "id", until_version=3)


def test_a_null_key_under_a_path_naming_a_schema_is_a_null_key(
    spark: Any, endpoints: Endpoints, tmp_path: Any
) -> None:
    path = str(tmp_path / "CRM_SCHEMA" / "people_changes")  # words in a path decide nothing
    create_table(spark, path)
    append(spark, path, [(None, "b", 2)])

    with pytest.raises(NullKeyError, match="at version 1 "):
        publish(spark, endpoints, path, "id", until_version=1)


def test_unreachable_registry_is_retried_by_its_client_then_named() -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from producer.encode.registry import TopicSchemas
    from services.service_errors import UnreachableError
    from services.settings import SchemaRegistrySettings

    url = "http://127.0.0.1:9/apis/ccompat/v7"  # the discard port: nothing listens
    config = SchemaRegistrySettings(url=url).client_config()
    client = SchemaRegistryClient(config | {"max.retries": 1, "retries.wait.ms": 10})
    schemas = TopicSchemas(client, url, "t", "table", attempts=2)
    key = {"type": "record", "name": "k", "fields": [{"name": "id", "type": "string"}]}

    with pytest.raises(
        UnreachableError, match=r"schema registry at http://127\.0\.0\.1:9/.* 2 attempts"
    ):
        schemas.use(key, key, version=1)


def test_unreachable_spark_master_is_retried_then_named_with_exit_code_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    from producer.cli import main

    master = f"spark://127.0.0.1:{free_port()}"
    config = tmp_path / "producer.toml"
    config.write_text("[spark]\nstart_attempts = 2\n")

    code = main(
        ["--table", str(tmp_path / "t"), "--primary-key", "id", "--master", master]
        + ["--config", str(config), "--metrics-port", "0"]
    )

    assert code == 3
    message = capsys.readouterr().err
    assert f"Spark master {master} did not answer after 2 attempts" in message
    assert "fix --master" in message


def test_a_spark_without_delta_jars_stops_with_exit_2_naming_the_fix(
    endpoints: Endpoints, tmp_path: Any
) -> None:
    # Started where no stack directory holds the jars, as from another directory.
    done = without_delta_jars(
        "producer",
        ["--table", str(tmp_path / "t"), "--primary-key", "id", "--metrics-port", "0"],
        str(tmp_path / "no-jars"),
        kafka__bootstrap_servers=endpoints.kafka,
        schema_registry__url=endpoints.registry,
    )

    assert done.returncode == 2, done.stderr[-3000:]
    assert "Spark cannot load Delta Lake's classes" in done.stderr
    assert f"{tmp_path / 'no-jars'} does not exist" in done.stderr
    assert "cdfbridge-stack fetch spark" in done.stderr
