"""What stops a comparison before it can say equal or not."""

from schemas.errors import TerminalError


class NothingToCompareError(TerminalError):
    """The Delta table, its version, or the ClickHouse table is not there to compare."""
