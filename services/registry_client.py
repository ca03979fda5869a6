"""The process's schema registry clients, one for each registry settings: each client holds
its own TLS context and connection pool (about 0.9 MB, and the CPU of loading the CA
certificates), and a lake's tables share the registry."""

from __future__ import annotations

import json
import threading
from typing import Any

_CLIENTS: dict[str, Any] = {}  # by their settings
_LOCK = threading.Lock()


def registry_client(config: dict[str, Any]) -> Any:
    """The process's registry client for config (a SchemaRegistryClient's), made on first use."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    key = json.dumps(config, sort_keys=True, default=str)
    with _LOCK:
        if key not in _CLIENTS:
            _CLIENTS[key] = SchemaRegistryClient(config)
        return _CLIENTS[key]
