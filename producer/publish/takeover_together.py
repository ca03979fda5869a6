"""A lake's tables taken over together at its start: the steps of producer/publish/takeover.py
for every table at once, by one progress reader and one transaction of claims instead of
three readers and a transaction a table.

1. every table's progress read by one reader (producer/lake/startup.py does, for the check
   of which table it names), but for a progress topic this start created: it is empty, or
   holds what another start wrote since, which 4. reads;
2. a table whose progress names a producer other than this process's is left to
   take_over alone, which fences that producer;
3. the others' claims, handed together, commit in one transaction;
4. every progress read again by one reader until each shows its claim. A table whose claim
   another producer's record followed (one claiming it at the same time), or whose claim
   does not show within MARKERS_S, is left to take_over alone too.

A table left alone starts as every table does after a failure: take_over fences whoever
wrote or claimed it, and claims it again (claims are idempotent). A kill between the steps
leaves claims with no version records: the next producer fences this one, as it would.
"""

from __future__ import annotations

import time
from concurrent.futures import Future

from producer.publish.handed import Chunk
from producer.publish.publish import Publisher
from producer.publish.refusals import Refused
from producer.publish.takeover import MARKERS_S, claimant_ids, ids_of, writer_ids
from schemas.progress import Position
from services.progress_reads import read_together
from services.progress_topic import Reading
from services.settings import KafkaConfig


def take_over_together(
    kafka_config: KafkaConfig, publishers: list[Publisher], first: dict[str, Reading]
) -> dict[str, Position]:
    """The positions of the tables taken over together, by data topic (2. to 4.); first:
    each table's progress as read in 1. Every publisher shares one process's
    transactions, started already. A table absent is left to take_over alone."""
    claims: dict[str, Future[int]] = {}
    for publisher in publishers:
        reading, topic = first[publisher.topic], publisher.topic
        if not _others(reading, publisher.transactions.ids, topic):  # 2.
            record = (publisher.progress.topic, *publisher.progress.claim())
            claims[topic] = publisher.transactions.head.submit(Chunk(topic, [], record))  # 3.
    by_topic = {p.topic: p for p in publishers}
    claimed = [topic for topic, future in claims.items() if _committed(future)]
    waiting = {topic: first[topic].owners.end for topic in claimed}
    positions: dict[str, Position] = {}
    deadline = time.monotonic() + MARKERS_S
    while waiting and time.monotonic() < deadline:  # 4.
        readings = [Reading(by_topic[t].progress, since) for t, since in waiting.items()]
        read_together(kafka_config, readings)
        for reading in readings:
            topic, owners = reading.progress.data_topic, reading.owners
            publisher = by_topic[topic]
            if publisher.transactions.owner not in owners.writers:
                continue  # not shown yet
            del waiting[topic]
            mine = publisher.transactions.ids
            if not {i for w in owners.writers for i in ids_of(w, topic)} - set(mine):
                positions[topic] = reading.position()
        if waiting:
            time.sleep(0.05)
    return positions


def _others(reading: Reading, mine: list[str], topic: str) -> set[str]:
    """The transactional ids of the producers other than this process's that wrote the
    table's version record or made its last claim."""
    owners = reading.owners
    theirs = {*writer_ids(reading.position(), owners, topic), *claimant_ids(owners, topic)}
    return theirs - set(mine)


def _committed(claim: Future[int]) -> bool:
    """The claim's transaction committed; a refused one leaves its table to take_over."""
    try:
        claim.result()
    except Refused:
        return False
    return True
