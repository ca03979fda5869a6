"""The commit path's waiting ways out (consumer/group/uncommitted.py calls them): partitions
being revoked are written through, and a stopping topic drains. Both take the steps of
consumer/group/commit.py in order, waiting for each write."""

from __future__ import annotations

import logging
import time

from consumer.group.batch import PartitionBatch, TopicPartitionKey
from consumer.group.commit import CommitQueue
from schemas.errors import TransientError
from services.retry import backoff_s

log = logging.getLogger(__name__)


def write_through(queue: CommitQueue, batches: list[PartitionBatch]) -> None:
    """Steps 1–3 for each batch, waiting (those of partitions being revoked), after a unit
    that failed; after a transient error, the partition's later batches are skipped: no
    commit passes an unwritten batch, and its next owner reads them again."""
    broken: set[TopicPartitionKey] = set()
    failed = queue.retry
    if failed is not None:  # its batches come before any later one of their partitions
        try:
            queue.start_next()
            queue.settle()
        except TransientError as exc:
            broken |= failed.keys
            log.warning("revoked partition left uncommitted", extra={"error": str(exc)[:300]})
    for batch in batches:
        if batch.key in broken:
            continue
        try:
            queue.write_now(batch)
        except TransientError as exc:
            queue.retry = None  # read again by the partition's next owner
            broken.add(batch.key)
            log.warning("revoked partition left uncommitted", extra={"error": str(exc)[:300]})
    try:
        queue.flush()
    except TransientError as exc:
        log.warning("revoked partition left uncommitted", extra={"error": str(exc)[:300]})


def drain(queue: CommitQueue, deadline: float, max_backoff_s: float) -> bool:
    """Write every batch and commit, waiting, until `deadline`; a transient error is retried
    after services.retry's back-off, a failed unit as it was (same offsets, same token).
    False when the deadline came first."""
    failures = 0
    while (left := deadline - time.monotonic()) > 0:
        try:
            if not queue.settle(left):
                return False  # still inserting at the deadline
            if not queue.busy:
                queue.flush()
                return True
            queue.start_next()
        except TransientError as exc:
            failures += 1
            delay = min(backoff_s(failures, max_backoff_s), deadline - time.monotonic())
            log.warning(
                "transient error, retrying",
                extra={"error": str(exc)[:500], "retry_in_s": delay},
            )
            time.sleep(max(0.0, delay))
    return False
