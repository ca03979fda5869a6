"""What stops a comparison before it can say equal or not."""

from schemas.errors import ConfigError, TerminalError


class NothingToCompareError(TerminalError):
    """The Delta table, its version, or the ClickHouse table is not there to compare."""


class SparkClassesMissingError(ConfigError):
    def __init__(self, table: str, cause: str) -> None:
        super().__init__(
            f"Spark lacks classes it needs to read {table} ({cause}): `cdfbridge-stack fetch "
            "spark` downloads the jars it reads Delta and S3 with; elsewhere point "
            "CDFBRIDGE_SPARK__JARS_DIR at them, or read the table with delta-rs (--reader auto)"
        )
