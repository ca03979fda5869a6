"""Consumer logs: one JSON object per line, with the record's extra fields."""

import json
import logging

from consumer.logs import JsonFormatter, configure
from consumer.status import Status
from services.group_positions import PartitionOffsets


def test_a_batch_log_line_is_json_with_its_fields() -> None:
    record = logging.LogRecord(
        "consumer.group.commit", logging.INFO, "", 0, "batch committed", (), None
    )
    record.__dict__.update({"partition": 2, "rows": 100, "insert_ms": 12.5, "lag": 0})

    line = json.loads(JsonFormatter().format(record))

    assert line["message"] == "batch committed"
    assert (line["partition"], line["rows"], line["insert_ms"], line["lag"]) == (2, 100, 12.5, 0)


def test_status_lines_show_lag_per_partition_a_missing_table_and_history_gone() -> None:
    status = Status(
        group="g",
        topic="t",
        partitions=[PartitionOffsets(0, 5, 0, 8), PartitionOffsets(1, -1001, 2, 4)],
        table="`db`.`t`",
        rows=None,
        current_rows=None,
        last_version=None,
    )

    assert status.lines() == [
        "group g on topic t: total lag 5",
        "  partition 0: committed 5, end 8, lag 3",
        "  partition 1: committed none, end 4, lag 2",
        "table `db`.`t`: does not exist",
        "history gone: partition 1 needs offset 0, holds 2 on; a replay of topic t would be "
        "incomplete: load the table from the Delta table instead: cdfbridge-consumer rebuild "
        "--from-lake (bootstrap, for a new group)",
    ]


def test_registry_requests_are_not_logged_one_line_each_but_their_warnings_are() -> None:
    configure("INFO")

    registry_client = logging.getLogger("httpx2")
    assert not registry_client.isEnabledFor(logging.INFO)
    assert registry_client.isEnabledFor(logging.WARNING)
    assert logging.getLogger("consumer.group.commit").isEnabledFor(logging.INFO)
