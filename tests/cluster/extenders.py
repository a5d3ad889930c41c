"""Scheduler extenders that public projects ship, built and run beside the test
cluster: today AliyunContainerService's gpushare-scheduler-extender, whose source is
kept in gpushare_extender/ (README.md there says why and from which commit), built
as a Go module of its own into the harness's cache, keyed by that commit."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from tests.cluster import build
from tests.cluster.processes import ClusterError, free_port, log_tail, stop
from tests.cluster.state import ClusterState

GPUSHARE_DIR = Path(__file__).resolve().parent / "gpushare_extender"
GPUSHARE_COMMIT = "c0b61411cddabd1b19500878ab355afeeae5589e"
GPUSHARE = build.Binary(
    "gpushare-scheduler-extender",
    "github.com/AliyunContainerService/gpushare-scheduler-extender/cmd", (),
    module_dir=GPUSHARE_DIR, cache_key=f"gpushare-{GPUSHARE_COMMIT[:12]}")
# Its routes: <prefix>/filter and <prefix>/bind.
GPUSHARE_PREFIX = "/gpushare-scheduler"
START_TIMEOUT_SECONDS = 60.0


def gpushare_binary() -> Path:
    """The extender, built first if missing (one builder at a time, as build.py does)."""
    if not GPUSHARE.path.is_file():
        with build.build_lock():
            if not GPUSHARE.path.is_file():
                build.go_build(GPUSHARE.name, GPUSHARE.package, GPUSHARE.path,
                               GPUSHARE.module_dir)
    return GPUSHARE.path


class GpushareExtender:
    """`with GpushareExtender(state) as ext:` runs the extender against the cluster
    (with the admin's kubeconfig); `ext.url_prefix` is its urlPrefix. It listens on
    every address (it takes only a port) and answers /version once serving."""

    def __init__(self, state: ClusterState) -> None:
        self.port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="gpushare-", dir=state.dir))
        self.log_path = self.workdir / "gpushare.log"
        self.url_prefix = f"http://127.0.0.1:{self.port}{GPUSHARE_PREFIX}"
        self.env = {**os.environ, "KUBECONFIG": state.kubeconfig, "PORT": str(self.port),
                    "LOG_LEVEL": "info"}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> GpushareExtender:
        binary = gpushare_binary()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen([str(binary)], stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self.env,
                                            start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ClusterError(f"gpushare-scheduler-extender exited with "
                                   f"{self.process.returncode}; last lines of {self.log_path}:"
                                   f"\n{log_tail(self.log_path)}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/version",
                                            timeout=2):
                    return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        self.stop()
        raise ClusterError(f"gpushare-scheduler-extender not serving after "
                           f"{START_TIMEOUT_SECONDS:.0f}s; last lines of {self.log_path}:\n"
                           f"{log_tail(self.log_path)}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            stop(self.process.pid)
            self.process.wait()

    def __enter__(self) -> GpushareExtender:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()
