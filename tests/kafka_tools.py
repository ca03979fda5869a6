"""Kafka's own command-line tools, run from the local stack's jars (stack/maven/kafka/pom.xml),
for what librdkafka's admin API cannot ask the broker."""

from __future__ import annotations

import subprocess

from stack.fetch import fetch, java, lib_dir
from stack.settings import StackSettings


def transactions(bootstrap: str) -> dict[str, int]:
    """{transactional id: producer id} of every transactional id the cluster's transaction
    coordinators hold (`kafka-transactions.sh list`)."""
    settings = StackSettings()
    fetch(settings, ("kafka",))
    done = subprocess.run(
        [
            java(),
            "-cp",
            f"{lib_dir(settings, 'kafka')}/*",
            "org.apache.kafka.tools.TransactionsCommand",
            "--bootstrap-server",
            bootstrap,
            "list",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"kafka-transactions list failed:\n{done.stdout}{done.stderr}"
    header, *lines = [
        [cell.strip() for cell in line.split("\t")]
        for line in done.stdout.splitlines()
        if line.strip()
    ]
    assert header[:3] == ["TransactionalId", "Coordinator", "ProducerId"], header
    return {line[0]: int(line[2]) for line in lines}
