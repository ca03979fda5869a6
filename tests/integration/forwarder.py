"""A TCP forwarder in front of a real service, to take the service away and bring it back
as its clients see it (connections refused, open ones cut) while the shared stack runs on."""

from __future__ import annotations

import socket
import threading
from contextlib import suppress

from tests.conftest import free_port


class Forwarder:
    """Listens on a loopback port and pipes each connection to `target` (host, port)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target, self.port = target, free_port()
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port), reuse_port=True)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        """The service is gone: new connections are refused, open ones are cut."""
        with self._lock:
            if self._listener is not None:
                with suppress(OSError):  # wakes the thread blocked in accept()
                    self._listener.shutdown(socket.SHUT_RDWR)
                self._listener.close()
                self._listener = None
            for sock in self._open:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
