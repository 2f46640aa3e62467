"""A real Carrag server process on loopback, for end-to-end tests and scripts: uvicorn in a child on a
socket bound here (the port is known before it starts), in a fresh data directory, with every Carrag
setting removed from its environment so nothing leaks in but what the caller passes.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

# Settings every server started here gets unless the caller overrides them.
BASE_SETTINGS = {
    "PER_HOST_DELAY": "0",
    "LOG_JSON": "false",
    "LOG_LEVEL": "WARNING",
    "EMBED_RETRY_BACKOFF": "0.01",
}


@dataclass(frozen=True)
class ServerProcess:
    url: str
    port: int
    data_dir: Path
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def clean_environment() -> dict[str, str]:
    """This process's environment minus every Carrag setting."""
    from carrag.services.settings import Settings

    names = {name.upper() for name in Settings.model_fields}
    return {key: value for key, value in os.environ.items() if key.upper() not in names}


def stop_process(process: subprocess.Popen, grace_seconds: float) -> None:
    """SIGTERM, then SIGKILL when the process has not exited after ``grace_seconds``."""
    process.terminate()
    try:
        process.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def bind_loopback() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@contextlib.contextmanager
def server_process(data_dir: Path, startup_timeout: float = 60.0, **settings: object) -> Iterator[ServerProcess]:
    """Run the service on 127.0.0.1 until the block ends. ``settings`` by name: ``LLM="none"``."""
    data_dir.mkdir(parents=True, exist_ok=True)
    env = clean_environment()
    env.update(BASE_SETTINGS)
    env.update({key.upper(): str(value) for key, value in settings.items()})
    env["DATA_DIR"] = str(data_dir)
    sock = bind_loopback()
    port = sock.getsockname()[1]
    log_path = data_dir / "server.log"
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "carrag.api.main:app_factory",
        "--factory",
        "--fd",
        str(sock.fileno()),
        "--log-level",
        "warning",
        "--timeout-graceful-shutdown",
        "5",
    ]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            command, cwd=data_dir, env=env, pass_fds=[sock.fileno()], stdout=log_file, stderr=subprocess.STDOUT
        )
    sock.close()  # the child holds its own copy
    server = ServerProcess(f"http://127.0.0.1:{port}", port, data_dir, process, log_path)
    try:
        _wait_until_up(server, startup_timeout)
        yield server
    finally:
        stop_process(process, grace_seconds=15)


def _wait_until_up(server: ServerProcess, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"the server exited with {server.process.returncode}:\n{server.log()}")
        try:
            if httpx.get(f"{server.url}/health", timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the server did not answer /health within {timeout:.0f}s:\n{server.log()}")
