"""Where a bootstrap's snapshot ends and following the topic begins (consumer/rebuild/bootstrap.py
steps 1 and 2): the data topic's last stable offsets, and a progress record that covers
every transaction below them.

Kafka ends a transaction partition by partition: its commit marker can be on a data
partition, which moves that partition's last stable offset (LSO) past the transaction,
while the progress partition's marker is not written yet, so a read_committed reader still
sees the record before it. Loading the lake at that record's version and following from
those offsets would skip the transaction. So:
1. read the data partitions' LSOs: a read_committed reader's end;
2. read the progress partition's high watermark H. A transaction below the LSOs has been
   committed, so its producer had written its progress record (acknowledged by every
   in-sync replica) before asking to commit: the record is below H;
3. wait until the progress partition's LSO reaches H: every transaction with a record below
   H has ended there too, and its record is visible or aborted;
4. the progress record then read names that transaction's version or a later one. Changes
   of a later one that lie past the LSOs are read again by the follower, and lose to or
   equal the snapshot's rows (schemas/changes.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from schemas.errors import ServiceUnavailableError
from schemas.naming import progress_topic
from services.partition_ends import TIMEOUT_S, offsets_probe, partition_end

log = logging.getLogger(__name__)
# A transaction is aborted by its coordinator after transaction.timeout.ms at most (the
# producer's is 600 s): wait that long, and a little more, for the progress partition.
SETTLE_S = 660.0
LOOK_S = 0.2


class ProgressUnsettledError(ServiceUnavailableError):
    """The progress partition kept a transaction open for longer than any producer may."""

    def __init__(self, topic: str, waited_s: float) -> None:
        super().__init__(
            f"{topic} kept a transaction open for {waited_s:.0f} s, longer than a producer's "
            "transaction timeout: check the brokers (the transaction coordinator's log), then "
            "run the bootstrap again"
        )


def settle_progress(kafka_config: Mapping[str, Any], topic: str) -> None:
    """Steps 2 and 3, once step 1 is done: return once every transaction that wrote to the
    progress partition before now has ended there."""
    progress, doing = progress_topic(topic), f"reading the offsets of {progress_topic(topic)}"
    with offsets_probe(kafka_config, "read_uncommitted", doing) as probe:
        if not probe.list_topics(progress, timeout=TIMEOUT_S).topics[progress].partitions:
            return  # nothing published yet
        high = partition_end(probe, progress, 0)  # 2.
    began = time.monotonic()
    with offsets_probe(kafka_config, "read_committed", doing) as probe:
        while (stable := partition_end(probe, progress, 0)) < high:  # 3.
            waited = time.monotonic() - began
            if waited > SETTLE_S:
                raise ProgressUnsettledError(progress, waited)
            log.info(
                "waiting for a transaction of the progress topic to end",
                extra={"topic": progress, "stable": stable, "high": high},
            )
            time.sleep(LOOK_S)
