"""ClickHouse 26.9 as a real server, from the engine inside the chdb-core wheel.

Run as `python -m stack.clickhouse_server DIR`, where DIR holds config.xml (listen address
and ports) and receives the data. clickhouse-local serves HTTP and native TCP for as long
as one statement runs, so the statement ends with a read from a FIFO that nobody writes
to; SIGTERM opens and closes the FIFO's write end, the read ends, and the server stops.

clickhouse-local takes its user files path (where `file()` and `deltaLakeLocal()` may read)
to be its working directory, whatever config.xml says. Once it has read ./config.xml and
listens, the server moves to `/`, so a lake bootstrap reads local Delta tables anywhere.
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
import os
import re
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from types import ModuleType

RTLD_DEEPBIND = 0x8


def load_engine() -> ModuleType:
    """Load chdb's `_chdb` extension without running chdb/__init__.py.

    That __init__ opens and closes an embedded session, which shuts down process-wide
    singletons; Kafka-engine tables then fail with "Shutdown was called".
    """
    spec = importlib.util.find_spec("chdb")
    if spec is None or spec.origin is None:
        raise SystemExit("chdb-core is not installed; pip install -e '.[stack]'")
    package = Path(spec.origin).parent
    shared = str(package / "_chdb.abi3.so")
    cwd = os.getcwd()
    os.chdir(package)  # the extension finds its pybind11 helper libraries relative to cwd
    try:
        # As chdb does: its own allocator must win over libstdc++'s operator new/delete.
        ctypes.CDLL(shared, mode=sys.getdlopenflags() | RTLD_DEEPBIND)
        loader = importlib.machinery.ExtensionFileLoader("_chdb", shared)
        module_spec = importlib.util.spec_from_file_location("_chdb", shared, loader=loader)
        if module_spec is None:
            raise SystemExit(f"cannot load {shared}; reinstall chdb-core")
        module = importlib.util.module_from_spec(module_spec)
        loader.exec_module(module)
    finally:
        os.chdir(cwd)
    return module


def serve(directory: Path) -> None:
    os.chdir(directory)  # clickhouse-local reads ./config.xml
    fifo = directory / "stop.fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    engine = load_engine()
    quoted = str(fifo).replace("\\", "\\\\").replace("'", "\\'")
    listen = "SYSTEM START LISTEN HTTP; SYSTEM START LISTEN TCP; "
    sql = listen + f"SELECT count() FROM file('{quoted}', 'LineAsString')"  # noqa: S608
    # TabSeparated becomes the HTTP default format; clickhouse-connect parses it at connect.
    server = threading.Thread(
        target=engine.query, args=(sql, "TabSeparated"), kwargs={"path": str(directory / "data")}
    )
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server.start()
    _leave_directory_once_listening(directory, server)
    while server.is_alive() and not stop.wait(0.5):
        pass
    if server.is_alive():
        with fifo.open("w"):  # EOF for the blocked read: the statement ends, listeners close
            pass
        server.join()


def _leave_directory_once_listening(directory: Path, server: threading.Thread) -> None:
    config = (directory / "config.xml").read_text()
    port = re.search(r"<http_port>(\d+)</http_port>", config)
    host = re.search(r"<listen_host>([^<]+)</listen_host>", config)
    listen = host[1] if host is not None else "0.0.0.0"  # noqa: S104 - read, not bound
    address = "127.0.0.1" if listen in ("0.0.0.0", "::") else listen  # noqa: S104
    deadline = time.monotonic() + 120
    while port is not None and server.is_alive() and time.monotonic() < deadline:
        try:
            socket.create_connection((address, int(port[1])), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    os.chdir("/")


if __name__ == "__main__":
    serve(Path(sys.argv[1]).resolve())
