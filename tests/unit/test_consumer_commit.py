"""Every partition of a commit is checked: a failure a retry can get past is transient, any
other stops the consumer naming the partition and Kafka's error."""

import pytest
from confluent_kafka import KafkaError

from consumer.group.errors import CommitRefusedError
from consumer.group.kafka import commit_failure
from schemas.errors import ServiceUnavailableError

E = KafkaError


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (E(E.REBALANCE_IN_PROGRESS), ServiceUnavailableError),
        (E(E.UNKNOWN_MEMBER_ID, fatal=False, retriable=True), ServiceUnavailableError),
        (E(E.UNKNOWN_MEMBER_ID), ServiceUnavailableError),  # the partition's next owner rereads
        (E(E.ILLEGAL_GENERATION), ServiceUnavailableError),
        (E(E.COORDINATOR_LOAD_IN_PROGRESS), ServiceUnavailableError),
        (E(E.NOT_COORDINATOR), ServiceUnavailableError),
        (E(E._WAIT_COORD), ServiceUnavailableError),
        (E(E._TRANSPORT), ServiceUnavailableError),
        (E(E.REQUEST_TIMED_OUT), ServiceUnavailableError),
        (E(E.OFFSET_METADATA_TOO_LARGE, retriable=True), ServiceUnavailableError),
        (E(E.UNKNOWN_TOPIC_OR_PART), CommitRefusedError),
        (E(E.GROUP_AUTHORIZATION_FAILED), CommitRefusedError),
        (E(E.TOPIC_AUTHORIZATION_FAILED), CommitRefusedError),
        (E(E.OFFSET_METADATA_TOO_LARGE), CommitRefusedError),
        (E(E.FENCED_INSTANCE_ID), CommitRefusedError),
        (E(E.REBALANCE_IN_PROGRESS, fatal=True), CommitRefusedError),
    ],
    ids=lambda v: v.name() if isinstance(v, KafkaError) else v.__name__,
)
def test_a_failed_partition_is_transient_only_when_a_retry_can_pass(
    error: KafkaError, expected: type[Exception]
) -> None:
    failure = commit_failure([("orders", 0, 10, None), ("orders", 7, 42, error)])

    assert type(failure) is expected
    assert "offset 42 of partition 7 of orders" in str(failure)
    assert error.name() in str(failure)


def test_a_commit_whose_partitions_all_succeeded_is_no_failure() -> None:
    assert commit_failure([("orders", 0, 10, None), ("orders", 1, 3, None)]) is None


def test_a_refused_commit_names_the_fix() -> None:
    failure = commit_failure([("orders", 2, 5, E(E.GROUP_AUTHORIZATION_FAILED))])

    assert "Read on its group and topic" in str(failure)
    assert "restart" in str(failure)
