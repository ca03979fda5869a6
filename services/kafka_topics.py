"""Topics looked up by name through the Admin API's DescribeTopics, never named in a
metadata request: a broker with auto.create.topics.enable (Kafka's default) answers that by
creating the topic, with the broker's partition count and retention."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

TIMEOUT_S = 30
# A topic not there, or just created and without leaders yet.
_NOT_YET = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE)


def described(admin: AdminClient, topics: list[str]) -> dict[str, str]:
    """Those of topics the cluster knows, with their partitions, each with its Kafka topic id
    (a topic deleted and created again has a new one); raises KafkaException for any other
    answer than "not there (yet)"."""
    found = {}
    futures = admin.describe_topics(TopicCollection(topics), request_timeout=TIMEOUT_S)
    for name, future in futures.items():
        try:
            description = future.result(timeout=TIMEOUT_S)
            if description.partitions:
                found[name] = str(description.topic_id)
        except KafkaException as exc:
            if exc.args[0].code() not in _NOT_YET:
                raise
    return found
