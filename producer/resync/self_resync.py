"""`on_incompatible_change = "resync"`: a table whose change the producer cannot follow
resyncs itself instead of stopping.

A non-additive schema change (a column dropped, renamed or retyped; an overwrite with a new
schema), a table dropped and created again at its path, or a history no longer there (VACUUM, log retention, the Change Data Feed turned
off for a while) stops a table by default, until an operator asks for a resync. With the
setting, the producer asks for it itself (producer/resync/resync_command.py `request`), then starts
the table over: the snapshot of a new generation (producer/resync/resync.py), which a consumer with
`rebuild = "auto"` rebuilds its table from.
"""

from __future__ import annotations

import logging

from producer import metrics
from producer.errors import SchemaChangeError, TableRecreatedError, VersionUnavailableError
from producer.resync.resync_command import request
from producer.settings import ProducerSettings
from schemas.errors import ConfigError

INCOMPATIBLE = (SchemaChangeError, TableRecreatedError, VersionUnavailableError)


def resyncs_itself(exc: BaseException, settings: ProducerSettings) -> bool:
    """True when exc is a change the table's setting resyncs for, and the request is made
    (or one pending is joined); False to let exc stop the table."""
    config = settings.source
    if config.on_incompatible_change != "resync" or not isinstance(exc, INCOMPATIBLE):
        return False
    try:
        asked = request(settings.kafka.client_config(), config.topic_name, wait_s=0)
    except ConfigError:
        return False  # nothing published yet: a first start takes --snapshot instead
    metrics.event(
        "resync_by_itself",
        logging.WARNING,
        table=config.table,
        topic=config.topic_name,
        generation=asked.requested,
        reason=f"{type(exc).__name__}: {exc}"[:500],
    )
    return True
