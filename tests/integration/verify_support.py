"""A verify watcher run in a thread for a test's `with` block, stopped and joined after."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from verify.settings import VerifySettings
from verify.watch import Watch


@contextmanager
def running(settings: VerifySettings) -> Iterator[Watch]:
    watch = Watch(settings)
    watcher = threading.Thread(target=watch.run)
    watcher.start()
    try:
        yield watch
    finally:
        watch.stop.set()
        watcher.join(60)
