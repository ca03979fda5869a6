"""A session on a cluster's master keeps Spark's own defaults: the small-machine settings
(services/spark_session.py SMALL_MACHINE_CONF) are for a session inside the process only."""

import json
import subprocess
import sys

import pytest

from services.class_archive import JAVA_OPTIONS
from services.spark_session import SMALL_MACHINE_CONF

pytestmark = [pytest.mark.integration, pytest.mark.spark]

# One session per JVM: the cluster's is made in a process of its own, which prints its
# settings as JSON once it has run a job on the cluster's executor.
SESSION = """
import json, sys
from services.class_archive import JAVA_OPTIONS
from services.spark_session import SMALL_MACHINE_CONF, SparkSection, session_for
from services.storage import StorageSettings

section = SparkSection(master=sys.argv[1], conf={"spark.cores.max": "1"})
spark = session_for(section, StorageSettings(), "cdfbridge-cluster-defaults")
try:
    assert spark.range(10).count() == 10  # the executor answers
    conf = spark.sparkContext.getConf()
    found = {key: conf.get(key) for key in SMALL_MACHINE_CONF if conf.contains(key)}
    # PySpark's own JVM options (and the class archive's) are there whatever the master.
    options = found.pop(JAVA_OPTIONS, "")
    found |= {JAVA_OPTIONS: options} if SMALL_MACHINE_CONF[JAVA_OPTIONS] in options else {}
    print(json.dumps({"set": found, "timezone": spark.conf.get("spark.sql.session.timeZone")}))
finally:
    spark.stop()
"""


def test_a_session_on_a_standalone_cluster_keeps_sparks_own_defaults(spark_cluster: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SESSION, spark_cluster],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["set"] == {}
    assert found["timezone"] == "UTC"  # what every session sets


def test_a_session_in_the_process_is_sized_for_a_small_machine(spark: object) -> None:
    conf = spark.sparkContext.getConf()  # type: ignore[attr-defined]
    settings = {key: conf.get(key) for key in SMALL_MACHINE_CONF}
    options = settings.pop(JAVA_OPTIONS)  # with PySpark's own and the class archive's

    assert settings == {k: v for k, v in SMALL_MACHINE_CONF.items() if k != JAVA_OPTIONS}
    assert SMALL_MACHINE_CONF[JAVA_OPTIONS] in options
