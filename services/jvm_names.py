"""JVM classes by their full names, with no lookup of the name's parts.

py4j resolves `spark._jvm.org.apache.hadoop.fs.Path` one segment at a time: `org`, then
`org.apache`, and so on, each a class lookup that fails only after searching every jar
on the driver's class path. While a lake of 200 tables started, the driver JVM spent about
a quarter of its samples in such lookups (a JFR recording: py4j's class loading and
`ZipFile.getEntry`). A class named in full costs none: its static
members and constructors are reached by that name.

A Java collection iterated through py4j costs a call per element, and its end is a
NoSuchElementException, which pyspark's handler converts with about 13 `is_instance_of`
checks, each resolving `py4j.reflection.TypeUtil` by its parts: `java_values` takes it
as JSON in one call instead.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def jvm_class(spark: SparkSession, name: str) -> Any:
    """The JVM class `name` (package and class, `$` for a Scala object's class)."""
    from py4j.java_gateway import JavaClass

    return JavaClass(name, spark.sparkContext._gateway._gateway_client)  # type: ignore[union-attr]


def scala_object(spark: SparkSession, name: str) -> Any:
    """The Scala object `name` (its companion's name, without `$`)."""
    return getattr(jvm_class(spark, f"{name}$"), "MODULE$")


def java_values(spark: SparkSession, collection: Any) -> Any:
    """A Java collection of strings (a Set, List or Map) as Python values, in one call."""
    client = spark.sparkContext._gateway._gateway_client  # type: ignore[union-attr]
    return json.loads(str(_mapper(client).writeValueAsString(collection)))


@functools.lru_cache(maxsize=1)  # a process has one gateway; a new one replaces it
def _mapper(client: Any) -> Any:
    """Jackson's ObjectMapper in the driver JVM (Spark's own JSON library)."""
    from py4j.java_gateway import JavaClass

    return JavaClass("com.fasterxml.jackson.databind.ObjectMapper", client)()


def driver_heap_bytes(spark: SparkSession) -> int:
    """The most the driver's JVM heap may grow to (its -Xmx, spark.driver.memory)."""
    return int(jvm_class(spark, "java.lang.Runtime").getRuntime().maxMemory())
