"""Apache Kafka, single node in KRaft mode, from the jars of stack/maven/kafka."""

from __future__ import annotations

import base64
import subprocess
import uuid
from pathlib import Path

from stack.credentials import KAFKA_ADMIN, KAFKA_USER, Credentials
from stack.errors import StackSetupError
from stack.fetch import java, lib_dir
from stack.process import Service
from stack.settings import LOOPBACK

TEMPLATES = Path(__file__).parent / "templates"


class Kafka(Service):
    name = "kafka"
    needs = ("kafka",)  # what `cdfbridge-stack fetch` gets for it

    @property
    def endpoint(self) -> str:
        return self.settings.kafka_bootstrap

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.settings.kafka_port, self.settings.kafka_controller_port)

    @property
    def _data(self) -> Path:
        return self.dir / "data"

    def _classpath(self) -> str:
        lib = lib_dir(self.settings, "kafka")
        if not any(lib.glob("kafka_2.13-*.jar")):
            raise StackSetupError(f"no Kafka jars in {lib}; run: cdfbridge-stack fetch")
        return f"{lib}/*"

    def _listeners(self) -> tuple[str, str]:
        """listeners and advertised.listeners: clients' own, the controller's on loopback,
        and the optional external one."""
        s = self.settings
        clients = "SASL_SSL" if s.secure else "PLAINTEXT"
        bound = [
            f"{clients}://{s.listen_host}:{s.kafka_port}",
            f"CONTROLLER://{LOOPBACK}:{s.kafka_controller_port}",
        ]
        advertised = [f"{clients}://{s.kafka_advertised_host}:{s.kafka_port}"]
        if s.kafka_external:
            bound.append(f"EXTERNAL://{s.listen_host}:{s.kafka_external_port}")
            advertised.append(f"EXTERNAL://{s.kafka_external}")
        return ",".join(bound), ",".join(advertised)

    def prepare(self) -> None:
        listeners, advertised = self._listeners()
        config = (
            (TEMPLATES / "kafka.properties")
            .read_text()
            .format(
                listeners=listeners,
                advertised=advertised,
                controller_port=self.settings.kafka_controller_port,
                data_dir=self._data,
            )
        )
        properties = self.dir / "server.properties"
        properties.unlink(missing_ok=True)
        properties.touch(mode=0o600)  # the secured broker's own password is in it
        properties.write_text(config + self._secure_config())
        (self.dir / "log4j2.properties").write_text((TEMPLATES / "log4j2.properties").read_text())
        if not (self._data / "meta.properties").exists():
            self._format_storage()

    def _secure_config(self) -> str:
        if not self.settings.secure:
            return ""
        credentials = Credentials(self.settings)
        credentials.ensure()
        return (
            (TEMPLATES / "kafka-secure.properties")
            .read_text()
            .format(
                admin=KAFKA_ADMIN,
                admin_password=credentials.password("kafka-admin"),
                user=KAFKA_USER,
                password=credentials.password("kafka"),
                keystore=credentials.keystore_path,
                ca=credentials.ca_path,
            )
        )

    def _scram_users(self) -> list[str]:
        """StorageTool arguments adding the SCRAM users (the secured stack's)."""
        if not self.settings.secure:
            return []
        credentials = Credentials(self.settings)
        return [
            f"--add-scram=SCRAM-SHA-512=[name={user},password={credentials.password(key)}]"
            for user, key in ((KAFKA_ADMIN, "kafka-admin"), (KAFKA_USER, "kafka"))
        ]

    def client_config(self) -> dict[str, str]:
        """What a client of this broker needs: the probe's settings."""
        config = {"bootstrap.servers": self.endpoint}
        if self.settings.secure:
            credentials = Credentials(self.settings)
            config |= {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": KAFKA_USER,
                "sasl.password": credentials.password("kafka"),
                "ssl.ca.location": str(credentials.ca_path),
            }
        return config

    def _format_storage(self) -> None:
        cluster_id = "-"
        while cluster_id.startswith("-"):  # as Kafka's own random-uuid: never read as a flag
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        # With controller.quorum.voters set, the format takes no --standalone.
        done = subprocess.run(
            [
                *self._java(),
                "kafka.tools.StorageTool",
                "format",
                f"--cluster-id={cluster_id}",
                "-c",
                "server.properties",
                *self._scram_users(),
            ],
            cwd=self.dir,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise StackSetupError(f"formatting Kafka storage failed:\n{done.stdout}{done.stderr}")

    def _java(self) -> list[str]:
        return [
            java(),
            f"-Xmx{self.settings.kafka_heap}",
            f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.dir}",
            "-cp",
            self._classpath(),
        ]

    def command(self) -> list[str]:
        return [*self._java(), "kafka.Kafka", str(self.dir / "server.properties")]

    def probe(self) -> bool:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({**self.client_config(), "log_level": 0})
        try:
            return bool(admin.list_topics(timeout=2).brokers)
        except KafkaException:
            return False
