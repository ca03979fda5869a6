"""The image's healthcheck: `python -m services.healthcheck` exits 0 when this container's
stage answers over HTTP, else 1.

The consumer's /health (503 while a topic is stopped or not polling) wins when its port is
open; otherwise the producer's /metrics; otherwise `cdfbridge-verify --watch`'s /health
(503 while a table's rounds fail). The ports are the stages' own settings
(CDFBRIDGE_CONSUMER__METRICS_PORT, CDFBRIDGE_SOURCE__METRICS_PORT,
CDFBRIDGE_VERIFY__METRICS_PORT), read from the environment the container runs with.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

CONSUMER = ("CDFBRIDGE_CONSUMER__METRICS_PORT", "9465", "/health")
PRODUCER = ("CDFBRIDGE_SOURCE__METRICS_PORT", "9464", "/metrics")
WATCHER = ("CDFBRIDGE_VERIFY__METRICS_PORT", "9466", "/health")


def answers(url: str, timeout_s: float = 4.0) -> bool | None:
    """True on 200, False on another status, None when nothing listens."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 (loopback)
            return bool(response.status == 200)
    except urllib.error.HTTPError:
        return False
    except OSError:
        return None


def main() -> int:
    for variable, default, path in (CONSUMER, PRODUCER, WATCHER):
        port = os.environ.get(variable, default)
        if port in ("", "0"):
            continue
        state = answers(f"http://127.0.0.1:{port}{path}")
        if state is not None:
            if not state:
                print(f"unhealthy: http://127.0.0.1:{port}{path} did not answer 200")
            return 0 if state else 1
    print("unhealthy: no consumer's or watcher's /health and no producer's /metrics answers")
    return 1


if __name__ == "__main__":
    sys.exit(main())
