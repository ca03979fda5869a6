"""The Delta snapshot read by Spark: for reader features delta-rs is not known to read, or
when --reader spark asks for it. The session is the producer's (services/spark_session.py), so the
same jars, [storage] settings and [spark] conf (CDFBRIDGE_SPARK__*) apply.

Arrow batches are streamed from the driver as Spark's tasks finish them and inserted as
they come, instead of collecting the whole snapshot first as DataFrame.toArrow() does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pyarrow as pa

from verify.errors import NothingToCompareError, SparkClassesMissingError
from verify.routes import VACUUMED, Route, Snapshot
from verify.settings import VerifySettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Spark without the Delta (or S3A) jars: its data source or file system class is not found.
MISSING_CLASSES = {
    "org.apache.spark.SparkClassNotFoundException",
    "java.lang.ClassNotFoundException",
}


def open_with_spark(settings: VerifySettings, version: int) -> Snapshot:
    """The table at `version`, as Spark with Delta reads it."""
    from services.spark_session import DeltaClassesMissingError, column, session_for

    uri = settings.verify.table
    try:
        spark = session_for(settings.spark, settings.storage, app_name="cdfbridge-verify")
    except DeltaClassesMissingError as exc:
        raise SparkClassesMissingError(uri, exc.why) from exc
    endpoint = settings.storage.endpoint
    with _translated(uri, version, endpoint):
        frame = spark.read.format("delta").option("versionAsOf", version).load(uri)

    def batches(columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        with _translated(uri, version, endpoint):
            yield from arrow_batches(frame.select(*[column(name) for name in columns]))

    return Snapshot(Route.SPARK, list(frame.columns), batches, frame.schema.jsonValue())


def arrow_batches(frame: DataFrame) -> Iterator[pa.RecordBatch]:
    """frame's rows as Arrow batches, in whatever order Spark's tasks finish.

    DataFrame.toArrow() does the same, then holds every batch; this yields each one.
    """
    from pyspark.errors.exceptions.captured import unwrap_spark_exception
    from pyspark.sql.pandas.serializers import ArrowCollectSerializer
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.util import _load_from_socket

    large = frame.sparkSession._jconf.arrowUseLargeVarTypes()
    schema = to_arrow_schema(frame.schema, True, prefers_large_types=large)
    serializer = ArrowCollectSerializer()  # type: ignore[no-untyped-call]
    port, secret, server = frame._jdf.collectAsArrowToPython()
    for item in _load_from_socket((port, secret), serializer):
        if isinstance(item, pa.RecordBatch):  # the last item is the batches' order: not needed
            yield item.cast(schema)
    with unwrap_spark_exception():
        server.getResult()  # raises what failed in Spark's tasks


@contextmanager
def _translated(uri: str, version: int, endpoint: str | None) -> Iterator[None]:
    """Spark's errors reading the table, as ours."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from services.spark_errors import causes, first_line
    from services.storage_errors import storage_error

    try:
        yield
    except (PySparkException, Py4JJavaError) as exc:
        found = causes(exc)  # error conditions and Java classes, not message text
        if found.classes & MISSING_CLASSES:
            raise SparkClassesMissingError(uri, first_line(exc)) from exc
        # The object store's failures are named as the producer names them, and exit 1
        # as the delta-rs reader's do.
        store = storage_error(exc, uri, endpoint)
        if store is not None:
            raise NothingToCompareError(str(store)) from exc
        condition = ", ".join(sorted(found.conditions)) or type(exc).__name__
        raise NothingToCompareError(
            f"Spark cannot read Delta table {uri} at version {version} "
            f"({condition}: {first_line(exc)}); {VACUUMED}"
        ) from exc
