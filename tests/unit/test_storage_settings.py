"""One [storage] section: the same settings become Spark's fs.s3a.* and delta-rs options."""

import pytest
from pydantic import ValidationError

from producer.settings import ProducerSettings
from services.settings import describe
from services.spark_session import SparkSection, conf_for
from services.storage import StorageOnly, StorageSettings
from verify.settings import VerifySettings

MINIO = StorageSettings(
    endpoint="http://127.0.0.1:9300",
    path_style_access=True,
    allow_http=True,
    access_key_id="ak-4711",
    secret_access_key="sk-4711",
)


def test_minio_settings_map_to_s3a_with_static_keys() -> None:
    conf = MINIO.spark_conf()

    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9300"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "us-east-1"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.access.key"] == "ak-4711"
    assert conf["spark.hadoop.fs.s3a.secret.key"] == "sk-4711"
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith(
        "SimpleAWSCredentialsProvider"
    )
    assert conf["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"


def test_the_same_settings_map_to_delta_rs_options() -> None:
    assert MINIO.delta_rs_options() == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9300",
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
        "AWS_ACCESS_KEY_ID": "ak-4711",
        "AWS_SECRET_ACCESS_KEY": "sk-4711",
        "conditional_put": "etag",
    }


def test_a_session_token_selects_temporary_credentials() -> None:
    storage = MINIO.model_copy(update={"session_token": MINIO.secret_access_key})

    conf = storage.spark_conf()

    assert conf["spark.hadoop.fs.s3a.session.token"] == "sk-4711"
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith(
        "TemporaryAWSCredentialsProvider"
    )
    assert storage.delta_rs_options()["AWS_SESSION_TOKEN"] == "sk-4711"


def test_without_keys_the_default_aws_credential_chain_is_left_alone() -> None:
    storage = StorageSettings(region="eu-west-1")

    conf = storage.spark_conf()

    assert "spark.hadoop.fs.s3a.aws.credentials.provider" not in conf
    assert "spark.hadoop.fs.s3a.access.key" not in conf
    assert "spark.hadoop.fs.s3a.endpoint" not in conf
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert storage.delta_rs_options() == {"AWS_REGION": "eu-west-1", "conditional_put": "etag"}


def test_spark_conf_given_by_the_user_wins_over_storage() -> None:
    spark = SparkSection(conf={"spark.hadoop.fs.s3a.path.style.access": "false"})

    conf = conf_for(spark, MINIO)

    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "false"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9300"


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"access_key_id": "ak-4711"}, "secret_access_key"),
        ({"session_token": "tok-4711"}, "session_token needs"),
        ({"endpoint": "http://minio:9000"}, "allow_http"),
    ],
)
def test_inconsistent_storage_settings_are_named_without_their_values(
    fields: dict[str, str], named: str
) -> None:
    with pytest.raises(ValidationError) as error:
        StorageSettings(**fields)

    message = describe(error.value)
    assert named in message
    assert "4711" not in message


def test_secrets_never_show_in_the_settings_repr() -> None:
    shown = f"{MINIO!r} {MINIO} {MINIO.model_dump_json()}"

    assert "sk-4711" not in shown
    assert "ak-4711" not in shown


def test_producer_verify_and_demo_data_read_the_same_env_vars(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CDFBRIDGE_STORAGE__ENDPOINT", "https://s3.example.internal")
    monkeypatch.setenv("CDFBRIDGE_STORAGE__ACCESS_KEY_ID", "ak-4711")
    monkeypatch.setenv("CDFBRIDGE_STORAGE__SECRET_ACCESS_KEY", "sk-4711")

    producer = ProducerSettings(source={"table": "s3a://lake/t", "primary_key": "id"})
    verify = VerifySettings(verify={"table": "s3a://lake/t"})

    assert producer.storage == verify.storage == StorageOnly().storage
    assert producer.storage.endpoint == "https://s3.example.internal"
    assert verify.storage_options["AWS_SECRET_ACCESS_KEY"] == "sk-4711"
