"""A standalone Spark cluster on loopback, a master and one worker, from the pyspark package.

For running the producer as it runs on a real cluster (`--master spark://127.0.0.1:7077`):
its executors, not the driver, read the table's files. The producer hands its jars to the
executors itself (spark.jars are served by the driver), so the worker needs none of them.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from stack.process import Service
from stack.settings import LOOPBACK, StackSettings


def spark_class() -> str:
    """pyspark's launcher script; it finds Spark's jars next to itself and Java on PATH."""
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


class SparkMaster(Service):
    name = "spark-master"

    @property
    def endpoint(self) -> str:
        return self.settings.spark_master_url

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.settings.spark_master_port, self.settings.spark_master_ui_port)

    def prepare(self) -> None:
        _defaults(self.dir)

    def command(self) -> list[str]:
        return [
            spark_class(),
            "org.apache.spark.deploy.master.Master",
            "--host",
            LOOPBACK,
            "--port",
            str(self.settings.spark_master_port),
            "--webui-port",
            str(self.settings.spark_master_ui_port),
            "--properties-file",
            str(self.dir / "spark-defaults.conf"),  # also marks the process as ours
        ]

    def environment(self) -> dict[str, str]:
        return {"SPARK_LOG_DIR": str(self.dir), "SPARK_LOCAL_IP": LOOPBACK}

    def probe(self) -> bool:
        return _ui_json(self.settings.spark_master_ui_port).get("status") == "ALIVE"


class SparkWorker(Service):
    name = "spark-worker"

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.settings.spark_worker_ui_port}"

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.settings.spark_worker_ui_port,)

    def prepare(self) -> None:
        _defaults(self.dir)

    def command(self) -> list[str]:
        return [
            spark_class(),
            "org.apache.spark.deploy.worker.Worker",
            self.settings.spark_master_url,
            "--host",
            LOOPBACK,
            "--cores",
            str(self.settings.spark_worker_cores),
            "--memory",
            self.settings.spark_worker_memory,
            "--work-dir",
            str(self.dir / "work"),
            "--webui-port",
            str(self.settings.spark_worker_ui_port),
            "--properties-file",
            str(self.dir / "spark-defaults.conf"),
        ]

    def environment(self) -> dict[str, str]:
        return {"SPARK_LOG_DIR": str(self.dir), "SPARK_LOCAL_IP": LOOPBACK}

    def probe(self) -> bool:
        """Ready once the master counts this worker among its alive ones."""
        workers = _ui_json(self.settings.spark_master_ui_port).get("workers", [])
        mine = f":{self.settings.spark_worker_ui_port}"
        return any(w.get("state") == "ALIVE" and mine in w.get("webuiaddress", "") for w in workers)


def master_state(settings: StackSettings) -> dict[str, Any]:
    """What the master's web UI reports: status, workers, active and completed applications."""
    return _ui_json(settings.spark_master_ui_port)


def _defaults(directory: Path) -> None:
    (directory / "spark-defaults.conf").write_text("spark.ui.showConsoleProgress false\n")


def _ui_json(port: int) -> dict[str, Any]:
    """The master's state as its web UI serves it: status, workers, applications."""
    url = f"http://{LOOPBACK}:{port}/json/"
    with urllib.request.urlopen(url, timeout=2.0) as resp:  # noqa: S310 (loopback URL)
        found: dict[str, Any] = json.load(resp)
        return found
