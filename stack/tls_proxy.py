"""The secured stack's TLS proxy (nginx): HTTPS in front of ClickHouse, and HTTPS with basic
auth in front of the schema registry. Neither server speaks TLS itself here, as in many
self-hosted installs."""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import ssl
from pathlib import Path

from stack.credentials import REGISTRY_USER, Credentials, htpasswd_line
from stack.errors import StackSetupError
from stack.process import Service, http_ok

TEMPLATES = Path(__file__).parent / "templates"


def _workers_user() -> str:
    """nginx's `user` line. Started by root, nginx runs its workers as `nobody`, who cannot
    read the htpasswd file or write the temporary directories when a directory above the
    stack is private (a checkout under /root, or under `mktemp -d`): every request would get
    HTTP 500. Its workers run as the user who started it instead; any other user leaves
    the line out (nginx ignores it there)."""
    if os.geteuid() != 0:
        return ""
    return f"user {pwd.getpwuid(0).pw_name} {grp.getgrgid(0).gr_name};\n"


class TlsProxy(Service):
    name = "tls-proxy"
    secure_only = True

    @property
    def endpoint(self) -> str:
        return f"{self.settings.clickhouse_url} {self.settings.registry_url}"

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.settings.clickhouse_https_port, self.settings.registry_https_port)

    def prepare(self) -> None:
        credentials = Credentials(self.settings)
        credentials.ensure()
        for temporary in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.dir / "tmp" / temporary).mkdir(parents=True, exist_ok=True)
        # A salted hash only; nginx's workers, which run as this user, read it per request.
        htpasswd = self.dir / "registry.htpasswd"
        htpasswd.write_text(htpasswd_line(REGISTRY_USER, credentials.password("registry")))
        htpasswd.chmod(0o600)
        s = self.settings
        (self.dir / "nginx.conf").write_text(
            (TEMPLATES / "nginx.conf")
            .read_text()
            .format(
                dir=self.dir,
                user=_workers_user(),
                cert=credentials.cert_path,
                key=credentials.key_path,
                host=s.listen_host,
                clickhouse_https_port=s.clickhouse_https_port,
                clickhouse_http_port=s.clickhouse_http_port,
                registry_https_port=s.registry_https_port,
                registry_port=s.registry_port,
            )
        )

    def command(self) -> list[str]:
        nginx = shutil.which("nginx", path=f"{os.environ.get('PATH', '')}:/usr/sbin")
        if nginx is None:
            raise StackSetupError(
                "nginx is not installed; the secured stack's TLS proxy runs it: "
                "apt-get install nginx-light (make setup does)"
            )
        return [nginx, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf"), "-e", "stderr"]

    def probe(self) -> bool:
        context = ssl.create_default_context(cafile=Credentials(self.settings).ca_path)
        return http_ok(f"{self.settings.clickhouse_url}/ping", expect=b"Ok.", context=context)
