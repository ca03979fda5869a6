"""A detached service process: its directory, PID file, log, start, stop and readiness."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from stack.errors import ServiceStartError
from stack.settings import LOOPBACK, StackSettings


@dataclass(frozen=True)
class Status:
    name: str
    pid: int | None
    ready: bool
    endpoint: str

    def line(self) -> str:
        state = "up" if self.ready else ("starting" if self.pid else "down")
        pid = f"pid {self.pid}" if self.pid else "-"
        return f"{self.name:<11} {state:<9} {pid:<11} {self.endpoint}"


class Service(ABC):
    """One service of the stack; subclasses say how to prepare, launch and probe it."""

    name: str
    needs: tuple[str, ...] = ()  # fetch targets (stack.fetch.TARGETS) it runs from
    secure_only = False  # part of the secured stack alone

    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings
        self.dir = settings.home / self.name

    @property
    def log_path(self) -> Path:
        return self.dir / f"{self.name}.log"

    @property
    def pid_path(self) -> Path:
        return self.dir / f"{self.name}.pid"

    @property
    @abstractmethod
    def endpoint(self) -> str:
        """What clients connect to."""

    @property
    @abstractmethod
    def ports(self) -> tuple[int, ...]:
        """Loopback ports the service binds."""

    @abstractmethod
    def prepare(self) -> None:
        """Write config and initialise storage; must be idempotent."""

    @abstractmethod
    def command(self) -> list[str]:
        """The command line of the service process, run with cwd=self.dir."""

    @abstractmethod
    def probe(self) -> bool:
        """True once the service answers requests."""

    def environment(self) -> dict[str, str]:
        """Env vars the process gets on top of ours."""
        return {}

    def on_ready(self) -> None:  # noqa: B027 - a hook most services leave empty
        """Runs after every start, once the service answers; must be idempotent."""

    def pid(self) -> int | None:
        """PID of our running process, or None (a stale PID file is ignored)."""
        try:
            pid = int(self.pid_path.read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None
        # Guards against PID reuse: our processes carry their directory on the command line.
        return pid if str(self.dir).encode() in cmdline else None

    def status(self) -> Status:
        pid = self.pid()
        return Status(self.name, pid, pid is not None and self._safe_probe(), self.endpoint)

    def start(self) -> None:
        """Start the process unless it already runs, then wait until it is ready."""
        if self.pid() is None:
            self._check_ports_free()
            self.dir.mkdir(parents=True, exist_ok=True)
            self.prepare()
            self._spawn()
        self.wait_ready()
        self.on_ready()

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM, then SIGKILL after timeout_s; a no-op when not running."""
        pid = self.pid()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            if not _wait_exit(pid, timeout_s):
                os.kill(pid, signal.SIGKILL)
                _wait_exit(pid, 10.0)
        self.pid_path.unlink(missing_ok=True)

    def serve(self) -> NoReturn:
        """Become the service, in the foreground (a container's main process): signals
        reach it directly, and its output goes to ours."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.prepare()
        os.chdir(self.dir)
        argv = self.command()
        os.execvpe(argv[0], argv, {**os.environ, **self.environment()})  # noqa: S606

    def answers(self) -> bool:
        """Whether the service answers requests, whoever started it (a healthcheck)."""
        return self._safe_probe()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + self.settings.start_timeout_s
        pid = int(self.pid_path.read_text())
        while time.monotonic() < deadline:
            # Not pid(): while a fresh process is inside execve, its cmdline reads empty.
            if _exited(pid):
                raise ServiceStartError(
                    f"{self.name} exited during start-up; see the end of {self.log_path}"
                )
            if self._safe_probe():
                return
            time.sleep(0.5)
        raise ServiceStartError(
            f"{self.name} did not become ready within {self.settings.start_timeout_s:.0f} s; "
            f"see {self.log_path}, or raise CDFBRIDGE_STACK_START_TIMEOUT_S"
        )

    def _spawn(self) -> None:
        with self.log_path.open("ab") as log:
            proc = subprocess.Popen(
                self.command(),
                cwd=self.dir,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **self.environment()},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # outlives the command that started it
            )
        self.pid_path.write_text(str(proc.pid))

    def _check_ports_free(self) -> None:
        for port in self.ports:
            with socket.socket() as sock:
                if sock.connect_ex((LOOPBACK, port)) == 0:
                    raise ServiceStartError(
                        f"port {port} for {self.name} is taken by another process; stop it or "
                        f"choose another port with the CDFBRIDGE_STACK_*_PORT settings"
                    )

    def _safe_probe(self) -> bool:
        try:
            return self.probe()
        except OSError:
            return False


def _exited(pid: int) -> bool:
    try:
        # Reaps it if it is our own child; otherwise just checks it still exists.
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _wait_exit(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _exited(pid):
            return True
        time.sleep(0.2)
    return _exited(pid)


def http_ok(
    url: str,
    timeout_s: float = 2.0,
    expect: bytes | None = None,
    context: ssl.SSLContext | None = None,
) -> bool:
    """True when GET url answers 200 (and, if given, a body starting with expect); an https
    URL is verified against context's CAs."""
    import urllib.request

    with urllib.request.urlopen(url, timeout=timeout_s, context=context) as resp:  # noqa: S310
        body: bytes = resp.read()
        return bool(resp.status == 200 and (expect is None or body.startswith(expect)))
