"""One root for every error cdfbridge raises on purpose.

Whether an error is transient (back off and retry, keep progress) or terminal
(stop, or dead-letter the message) is decided by its class alone.
"""


class CdfBridgeError(Exception):
    """Root of cdfbridge's errors; the message names the problem and the fix."""


class TransientError(CdfBridgeError):
    """May succeed if retried later: a service is down or still starting."""

    # Set by errors that mean waiting for another stage (not a failure): retried at least
    # this often, whatever the back-off has grown to (services/retry.py); an error may
    # set its own.
    poll_s: float | None = None


class TerminalError(CdfBridgeError):
    """Will fail again the same way until someone changes input or config."""


class ConfigError(TerminalError):
    """Settings are missing, malformed or inconsistent."""


class TableConfigError(ConfigError):
    """A setting of one table is wrong (its topic name, its column policy): with several
    tables in one process, that table fails alone."""


class ServiceUnavailableError(TransientError):
    """A service did not answer in time."""
