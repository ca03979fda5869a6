"""The start-up's pure parts: the class-data archive's record and options, the waterfall's
events, and the retry schedule of a wait for another stage."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from tenacity import RetryCallState, Retrying

from consumer.group.errors import NotPublishedYetError
from producer.steps import Waterfall, since_start_s
from schemas.errors import TransientError
from services.class_archive import (
    JAVA_OPTIONS,
    archive_of,
    record,
    record_of,
    usable,
    with_archive,
)
from services.retry import _backoff
from services.spark_session import java_options


@pytest.fixture
def jars(tmp_path: Path) -> Path:
    jars = tmp_path / "spark"
    jars.mkdir()
    (jars / "delta-spark_2.13-4.4.0.jar").write_bytes(b"jar")
    archive = archive_of(jars)
    archive.write_bytes(b"\0" * 4096)
    record(archive, jars)
    return jars


def test_an_archive_is_beside_its_jars(tmp_path: Path) -> None:
    assert archive_of(tmp_path / "lib" / "spark") == tmp_path / "lib" / "spark.jsa"


def test_a_whole_archive_built_for_these_jars_is_usable(jars: Path) -> None:
    assert usable(archive_of(jars), jars)


def test_a_truncated_archive_is_not_used(jars: Path, caplog: pytest.LogCaptureFixture) -> None:
    archive = archive_of(jars)
    archive.write_bytes(archive.read_bytes()[:1000])
    with caplog.at_level(logging.WARNING):
        assert not usable(archive, jars)
    assert "cdfbridge-stack fetch cds" in caplog.text


def test_an_archive_built_for_other_jars_is_not_used(jars: Path) -> None:
    (jars / "hadoop-aws-3.4.2.jar").write_bytes(b"jar")
    assert not usable(archive_of(jars), jars)


def test_an_archive_built_for_another_java_is_not_used(
    jars: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_bytes(b"")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert not usable(archive_of(jars), jars)
    record(archive_of(jars), jars)
    assert usable(archive_of(jars), jars)


def test_an_archive_without_its_record_is_not_used(jars: Path) -> None:
    archive = archive_of(jars)
    record_of(archive).write_text("{not json")
    assert not usable(archive, jars)
    assert not usable(jars.parent / "missing.jsa", jars)


def test_the_archive_joins_the_users_driver_options(jars: Path) -> None:
    archive = archive_of(jars)
    conf = with_archive({JAVA_OPTIONS: "-XX:TieredStopAtLevel=1", "a": "b"}, archive)
    assert conf == {
        JAVA_OPTIONS: f"-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile={archive}",
        "a": "b",
    }
    assert with_archive({}, archive) == {JAVA_OPTIONS: f"-XX:SharedArchiveFile={archive}"}


def test_options_that_choose_sharing_themselves_are_left_alone(jars: Path) -> None:
    for theirs in ("-Xshare:off", "-XX:SharedArchiveFile=/x.jsa"):
        assert with_archive({JAVA_OPTIONS: theirs}, archive_of(jars)) == {JAVA_OPTIONS: theirs}


def test_each_step_is_logged_until_the_start_is_over(caplog: pytest.LogCaptureFixture) -> None:
    steps = Waterfall("t")
    with caplog.at_level(logging.INFO, "cdfbridge.producer"):
        with steps.step("spark_session"):
            pass
        steps.done()
        with steps.step("delta_log"):
            pass
        steps.done()
    events = [json.loads(r.getMessage()) for r in caplog.records]
    assert [(e["event"], e.get("step")) for e in events] == [
        ("startup_step", "spark_session"),
        ("started", None),
    ]
    assert events[0]["topic"] == "t"
    assert 0 <= events[0]["at_s"] <= events[1]["at_s"] <= round(since_start_s(), 2) + 0.01


def _delay(error: BaseException, attempt: int) -> float:
    state = RetryCallState(Retrying(), None, (), {})
    state.attempt_number = attempt
    state.set_exception((type(error), error, None))
    return _backoff(30.0)(state)


def test_a_wait_for_another_stage_is_polled_every_second() -> None:
    assert _delay(NotPublishedYetError("no schema yet"), 8) == 1.0
    assert _delay(NotPublishedYetError("no schema yet"), 1) == 0.5


def test_a_failing_service_backs_off_to_the_ceiling() -> None:
    assert _delay(TransientError("down"), 8) == 30.0


def test_the_drivers_java_options_put_a_garbage_collector_of_the_users_first() -> None:
    assert java_options("-XX:+UseSerialGC", None) == {}
    both = java_options("-XX:+UseSerialGC", "-XX:SharedArchiveFile=a.jsa")
    assert both == {JAVA_OPTIONS: "-XX:+UseSerialGC -XX:SharedArchiveFile=a.jsa"}
    assert java_options("-XX:+UseSerialGC", "-XX:+UseG1GC -Xss2m") == {}  # theirs alone
