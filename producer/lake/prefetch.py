"""Running an iterator ahead of whoever iterates it, in a thread of its own.

The producer's reader: Spark reads and encodes the next slice while the publishing thread
sends the current one to Kafka. The thread runs one item ahead (one buffered, and the one
it is on), so memory is bounded however long the backlog is. How the iterator ends always
reaches the iterating side, after the items before it: its end, or the exception it
raised, even once stopping.

    with Prefetch(follow(...), stop=stop, name="cdf-reader") as slices:
        for item in slices:
            ...

Once stop is set (or close() is called) the thread takes no further item from the iterator,
drops the one it holds, closes the iterator and ends, so the iterating side sees the items
already buffered and then the end, or the exception the iterator raised meanwhile.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
AHEAD = 1  # items buffered for the iterating side
STOP_POLL_S = 0.5  # how often a full buffer looks at a stop event set from outside


@dataclass(frozen=True)
class _End:
    error: BaseException | None  # None: the iterator was exhausted, or stopped


class Prefetch(Generic[T]):
    """items, pulled in a thread named name; stop (or close()) makes it stop pulling."""

    def __init__(
        self,
        items: Iterable[T],
        *,
        stop: threading.Event | None = None,
        name: str = "prefetch",
    ) -> None:
        self._items = items
        self._stop = stop if stop is not None else threading.Event()
        self._buffer: deque[T] = deque()
        self._end: _End | None = None  # set once, by the thread; never dropped
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self) -> Prefetch[T]:
        self._start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _start(self) -> None:
        if self._thread.ident is None:
            self._thread.start()

    def close(self) -> None:
        """Stop taking items from the iterator; the thread ends after the item it is on."""
        self._stop.set()
        with self._changed:
            self._changed.notify_all()

    def __iter__(self) -> Iterator[T]:
        """The items in order, then the iterator's end: StopIteration, or what it raised."""
        self._start()
        while True:
            item = self._take()
            if isinstance(item, _End):
                if item.error is not None:
                    raise item.error
                return
            yield item

    def _take(self) -> T | _End:
        with self._changed:
            self._changed.wait_for(lambda: self._buffer or self._end is not None)
            if self._buffer:
                item = self._buffer.popleft()
                self._changed.notify_all()
                return item
            return self._end or _End(None)  # the end: only once the buffer is empty

    def _run(self) -> None:
        end = _End(None)
        iterator = iter(self._items)
        try:
            for item in iterator:
                if not self._put(item) or self._stop.is_set():
                    break
            _close(iterator)
        except BaseException as exc:  # noqa: BLE001 - handed to the iterating side to raise
            end = _End(exc)
        with self._changed:
            self._end = end
            self._changed.notify_all()

    def _put(self, item: T) -> bool:
        """Buffer item once there is room; False (dropped) when stopping first."""
        with self._changed:
            while len(self._buffer) >= AHEAD and not self._stop.is_set():
                self._changed.wait(STOP_POLL_S)
            if self._stop.is_set():
                return False
            self._buffer.append(item)
            self._changed.notify_all()
            return True


def _close(iterator: Iterator[object]) -> None:
    """Let a generator run its finally blocks in this thread."""
    close = getattr(iterator, "close", None)
    if close is not None:
        close()
