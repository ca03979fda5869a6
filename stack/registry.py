"""Apicurio Registry with its Confluent-compatible API, from stack/maven/registry."""

from __future__ import annotations

from stack.errors import StackSetupError
from stack.fetch import java, lib_dir
from stack.process import Service, http_ok
from stack.settings import LOOPBACK


class Registry(Service):
    name = "registry"
    needs = ("registry",)  # what `cdfbridge-stack fetch` gets for it

    @property
    def endpoint(self) -> str:
        return self.settings.registry_url

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.settings.registry_port, self.settings.registry_management_port)

    def prepare(self) -> None:
        if not (lib_dir(self.settings, "registry") / "quarkus-run.jar").exists():
            raise StackSetupError("the registry is not downloaded; run: cdfbridge-stack fetch")

    def command(self) -> list[str]:
        # Schemas are kept in an H2 file under the state directory: topics outlive a restart,
        # and their messages name schema ids that must still resolve when replayed.
        db = self.dir / "db" / "registry"
        return [
            java(),
            f"-Xmx{self.settings.registry_heap}",
            f"-Dquarkus.http.host={self.settings.listen_host}",
            f"-Dquarkus.http.port={self.settings.registry_port}",
            "-Dquarkus.log.console.json=false",
            # Lines per request (its access log) and per write (its audit and storage
            # logs) cost the registry CPU on every request and grow its log without bound.
            "-Dquarkus.http.access-log.enabled=false",
            '-Dquarkus.log.category."io.apicurio".level=WARN',
            # Its health/metrics interface (always on) defaults to 0.0.0.0:9000.
            f"-Dquarkus.management.host={LOOPBACK}",
            f"-Dquarkus.management.port={self.settings.registry_management_port}",
            "-Dapicurio.storage.kind=sql",
            "-Dapicurio.storage.sql.kind=h2",
            f"-Dapicurio.datasource.url=jdbc:h2:file:{db};DB_CLOSE_ON_EXIT=FALSE",
            f"-D{self.name}.dir={self.dir}",  # marks the process as ours in /proc/PID/cmdline
            "-jar",
            str(lib_dir(self.settings, "registry") / "quarkus-run.jar"),
        ]

    def probe(self) -> bool:
        # The server's own port, behind the TLS proxy in the secured stack.
        return http_ok(f"{self.settings.registry_plain_url}/subjects")
