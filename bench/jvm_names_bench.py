"""What a JVM class costs to name through py4j, in a warm session.

    .venv/bin/python bench/jvm_names_bench.py [--repeats 300]

py4j resolves `spark._jvm.org.apache.hadoop.fs.Path` one segment at a time, each segment a
class lookup that fails only after searching every jar on the driver's class path; a name
imported by the gateway (`spark._jvm.PythonUtils`) is tried against each import; a class
named in full (services/jvm_names.py) needs no call until it is used. Prints the mean time
of each, over --repeats lookups, twice.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from output import table

from producer.session import APP_NAME
from producer.settings import ProducerSettings
from services.jvm_names import jvm_class
from services.spark_session import session_for


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=300)
    args = p.parse_args()
    settings = ProducerSettings(source={"table": "/nowhere", "primary_key": "id"})
    spark: Any = session_for(settings.spark, settings.storage, APP_NAME)
    ways: dict[str, Callable[[], Any]] = {
        "spark._jvm.org.apache.hadoop.fs.Path": lambda: spark._jvm.org.apache.hadoop.fs.Path,
        "spark._jvm.PythonUtils (imported)": lambda: spark._jvm.PythonUtils,
        'jvm_class(spark, "org.apache.hadoop.fs.Path")': lambda: jvm_class(
            spark, "org.apache.hadoop.fs.Path"
        ),
    }
    rows = []
    for run in (1, 2):
        for name, way in ways.items():
            began = time.perf_counter()
            for _ in range(args.repeats):
                way()
            mean_us = (time.perf_counter() - began) / args.repeats * 1e6
            rows.append([run, name, round(mean_us, 1)])
    print(table(["run", "lookup", "mean µs"], rows))
    spark.stop()


if __name__ == "__main__":
    main()
