"""Run the real upstream kube-scheduler against the test cluster.

It is the yardstick for differential tests and benchmarks, so it runs from the
same pinned release as the cluster's API server (`state.release`, releases.py), with
a KubeSchedulerConfiguration that the caller chooses (leader election off unless the
caller turns it on). On a
cluster started with feature gates, pass them on (`feature_gates=state.feature_gates`)
so kube-scheduler runs upstream's alpha plugins against the alpha APIs.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.cluster import build
from tests.cluster.cluster import ClusterError, ClusterState, _stop, free_port, log_tail
from tests.cluster.gates import feature_gates_args

START_TIMEOUT_SECONDS = 60.0


class UpstreamScheduler:
    """`with UpstreamScheduler(state, config) as scheduler:` runs kube-scheduler."""

    def __init__(
        self,
        state: ClusterState,
        config: Mapping[str, Any] | None = None,
        *,
        extra_args: tuple[str, ...] = (),
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        self.state = state
        self.workdir = Path(tempfile.mkdtemp(prefix="kube-scheduler-", dir=state.dir))
        self.port = free_port()
        self.log_path = self.workdir / "kube-scheduler.log"
        config_body: dict[str, Any] = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            **(config or {}),
        }
        config_body["clientConnection"] = {
            **config_body.get("clientConnection", {}), "kubeconfig": state.kubeconfig
        }
        self.config_path = self.workdir / "config.yaml"
        self.config_path.write_text(json.dumps(config_body, indent=2))
        self.command = [
            str(build.binary_path("kube-scheduler", state.release)),
            f"--config={self.config_path}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={self.workdir}",
            # Metrics and health are read by tests and benchmarks without credentials.
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            *feature_gates_args(feature_gates or {}),
            *extra_args,
        ]
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> UpstreamScheduler:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ClusterError(
                    f"kube-scheduler exited with {self.process.returncode}; last lines of "
                    f"{self.log_path}:\n{log_tail(self.log_path)}"
                )
            try:
                if self.get("/healthz").strip() == "ok":
                    return self
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        self.stop()
        raise ClusterError(f"kube-scheduler not healthy after {START_TIMEOUT_SECONDS:.0f}s; "
                           f"last lines of {self.log_path}:\n{log_tail(self.log_path)}")

    def get(self, path: str) -> str:
        # kube-scheduler serves a self-signed certificate of its own.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{self.port}{path}"
        with urllib.request.urlopen(url, timeout=5, context=context) as response:
            body: bytes = response.read()
            return body.decode()

    def metrics(self) -> str:
        return self.get("/metrics")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            _stop(self.process.pid)
            self.process.wait()

    def __enter__(self) -> UpstreamScheduler:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
