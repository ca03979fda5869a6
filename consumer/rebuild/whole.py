"""A rebuild from the topic swaps in whole versions only.

A version too large for one transaction is published in several, one key-hash slice each
(schemas/progress.py `Part`). A catch-up that ends while such a version is half published
holds some of its slices and not the others: swapped in as it is, the table would show the
version in part until the producer published the rest, and for ever if that producer never
comes back. So, before the swap, the rebuild reads the progress record:
1. no part pending: the versions the catch-up read are whole (after a wait, once it has
   caught up again with the last slices); swap;
2. a part pending, and its producer publishing it (its `done` moves): catch up again, and
   look again;
3. a part pending that has not moved for STALL_S: refuse, naming the producer to start.

A producer that goes on publishing can finish one version in parts and start the next
between a catch-up and the look at the record; the rebuild's catch-up after the swap
(consumer/rebuild/steps.py step 4) reads their rest. What this module rules out is a table left
in part for good.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from schemas.errors import TerminalError
from schemas.progress import Part
from services.progress_topic import Progress
from services.settings import KafkaConfig

log = logging.getLogger(__name__)
STALL_S = 30.0  # a part whose producer has published no slice for this long is stopped
LOOK_S = 1.0


class PartialVersionError(TerminalError):
    """The topic's last version is published in part and its producer has stopped."""

    def __init__(self, topic: str, part: Part, table: str | None) -> None:
        what = "a snapshot at version" if part.snapshot else "version"
        producer = f"the producer of {table}" if table else "its producer"
        super().__init__(
            f"topic {topic} holds {what} {part.last} in part ({part.done + 1} of "
            f"{part.slices} slices) and no slice was published for {STALL_S:.0f} s: a table "
            f"rebuilt now would lack the rest. Start {producer}, which publishes the rest, "
            "then rebuild again"
        )


def wait_until_whole(kafka: KafkaConfig, topic: str, catch_up: Callable[[], None]) -> None:
    """Return once the progress record names no part pending, catching up after each slice
    the producer publishes (steps 1 and 2); raise PartialVersionError (step 3)."""
    progress, last_moved, seen = Progress(kafka, topic), time.monotonic(), None
    while True:
        position = progress.read()
        part = position.part
        if part is None:  # 1.
            if seen is not None:
                catch_up()
            return
        if part != seen:  # 2.
            seen, last_moved = part, time.monotonic()
            log.info(
                "waiting for a version published in parts",
                extra={"topic": topic, "version": part.last, "done": part.done + 1},
            )
        elif time.monotonic() - last_moved > STALL_S:  # 3.
            table = position.identity.table if position.identity else None
            raise PartialVersionError(topic, part, table)
        time.sleep(LOOK_S)
        catch_up()
