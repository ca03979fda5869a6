"""One JSON object per log line, with the fields a record carries in `extra`."""

from __future__ import annotations

import json
import logging
from typing import Any

# Third-party loggers that write a line per registry HTTP request; their failures still
# reach the log as our own errors.
CHATTY = ("httpx", "httpx2", "httpcore")
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line |= {k: v for k, v in vars(record).items() if k not in _STANDARD}
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure(level: str = "INFO") -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    for name in CHATTY:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))
