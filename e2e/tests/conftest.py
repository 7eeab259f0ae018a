"""Fixtures of the e2e pytest suites: a real `setats serve` process on free loopback ports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

E2E_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = E2E_DIR.parent
sys.path.insert(0, str(E2E_DIR))

SETATS_BIN = Path(os.environ.get("SETATS_BIN", REPO_DIR / "bin" / "setats"))


class Gateway:
    """A running gateway: url (grpc://127.0.0.1:PORT), admin_url, warehouse (as reported)."""

    def __init__(self, workdir: Path, *extra: str):
        self.workdir = workdir
        self.ready = workdir / "ready.json"
        self.log_path = workdir / "gateway.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [str(SETATS_BIN), "serve", "--warehouse", str(workdir / "warehouse"),
             "--flight-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
             "--nats-listen", "127.0.0.1:-1", "--ready-file", str(self.ready), *extra],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not (self.ready.exists() and self.ready.stat().st_size > 0):
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("gateway not ready after 60 s")
            time.sleep(0.05)
        info = json.loads(self.ready.read_text())
        self.url = "grpc://" + info["flight_addr"].replace("[::]", "127.0.0.1")
        self.admin_url = "http://" + info["admin_addr"].replace("[::]", "127.0.0.1")
        self.warehouse = info["warehouse"]

    def stop(self) -> int:
        """SIGTERM, then the exit code (SPEC: 0 on SIGTERM)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    if not SETATS_BIN.exists():
        pytest.skip(f"{SETATS_BIN} is not built (make build-gateway)")
    gw = Gateway(tmp_path_factory.mktemp("gateway"))
    yield gw
    rc = gw.stop()
    assert rc == 0, f"gateway exited {rc} on SIGTERM; log: {gw.log_path}"


@pytest.fixture
def client(gateway):
    from pyarrow_client import SetatsClient
    with SetatsClient(gateway.url) as c:
        yield c
