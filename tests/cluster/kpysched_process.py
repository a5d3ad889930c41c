"""Run kpysched as a real process against the test cluster, as an operator would."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.cluster.cluster import ClusterError, ClusterState, free_port, log_tail

START_TIMEOUT_SECONDS = 60.0


def scheduler_config(profiles: list[Mapping[str, Any]] | None = None,
                     **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "kubescheduler.config.k8s.io/v1",
                            "kind": "KubeSchedulerConfiguration", **fields}
    if profiles is not None:
        body["profiles"] = profiles
    return body


class KpyschedProcess:
    """`with KpyschedProcess(state, config) as kp:` runs `kpysched run` until the block ends."""

    def __init__(self, state: ClusterState, config: Mapping[str, Any] | None = None,
                 *, log_level: str = "debug",
                 wait_for: str | tuple[str, ...] = "scheduler.started",
                 extra_args: tuple[str, ...] = (), env: Mapping[str, str] | None = None,
                 kubeconfig: str | None = None, secure: bool = False,
                 new_session: bool = False) -> None:
        """`secure` serves HTTPS with delegated authentication, as in a cluster; by
        default the endpoints are plain HTTP (--insecure-serving) for the tests' probes."""
        self.state = state
        self.workdir = Path(tempfile.mkdtemp(prefix="kpysched-", dir=state.dir))
        self.log_path = self.workdir / "kpysched.log"
        self.port = free_port()
        self.url = f"{'https' if secure else 'http'}://127.0.0.1:{self.port}"
        # "scheduler.started" means leading and scheduling; "scheduler.informers_synced"
        # is enough for a standby replica. Several events: whichever comes first.
        self.wait_for = (wait_for,) if isinstance(wait_for, str) else wait_for
        self.command = [sys.executable, "-m", "kpysched.cli", "run",
                        "--log-format", "json",
                        "--log-level", log_level, "--bind-address", "127.0.0.1",
                        "--secure-port", str(self.port),
                        *(() if secure else ("--insecure-serving",)), *extra_args]
        if config is not None:
            config_path = self.workdir / "config.yaml"
            config_path.write_text(json.dumps(config, indent=2))
            self.command += ["--config", str(config_path)]
        # The environment, not --kubeconfig: with --config that flag is ignored, as
        # kube-scheduler ignores it.
        self.env = {**os.environ, "KPYSCHED_KUBECONFIG": kubeconfig or state.kubeconfig,
                    **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None
        self.returncode: int | None = None
        # A session of its own, as processes.spawn starts the cluster's components and
        # upstream.py kube-scheduler: with autogroup scheduling each session is a group
        # the kernel shares the CPU between (the benchmarks compare both schedulers).
        self.new_session = new_session
        # What log_events has parsed so far, and where in the log it stopped: tests poll
        # the log many times a second, and a debug log grows to many thousand lines.
        self._events: list[dict[str, Any]] = []
        self._parsed_up_to = 0

    def start(self) -> KpyschedProcess:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self.env,
                                            start_new_session=self.new_session)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ClusterError(f"kpysched exited with {self.process.returncode}; last lines "
                                   f"of {self.log_path}:\n{log_tail(self.log_path)}")
            if any(e.get("event") in self.wait_for for e in self.log_events()):
                return self
            time.sleep(0.1)
        self.stop()
        raise ClusterError(f"kpysched did not log {' or '.join(self.wait_for)} within "
                           f"{START_TIMEOUT_SECONDS:.0f}s; last "
                           f"lines of {self.log_path}:\n{log_tail(self.log_path)}")

    def get(self, path: str, token: str | None = None) -> tuple[int, str]:
        """GET an endpoint of the health/metrics server: (status, body). Over HTTPS the
        self-signed certificate is not verified; `token` is sent as a bearer token."""
        request = urllib.request.Request(f"{self.url}{path}", headers=(
            {"Authorization": f"Bearer {token}"} if token else {}))
        context = None
        if self.url.startswith("https"):
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        try:
            with urllib.request.urlopen(request, timeout=5, context=context) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def log_events(self) -> list[dict[str, Any]]:
        """Every JSON line of the log so far (others skipped), parsed once: each call reads
        only what was appended since the last, up to its last complete line."""
        if self.log_path.exists():
            with self.log_path.open("rb") as log:
                log.seek(self._parsed_up_to)
                appended = log.read()
            complete = appended[:appended.rfind(b"\n") + 1]
            self._parsed_up_to += len(complete)
            for line in complete.decode(errors="replace").splitlines():
                try:
                    self._events.append(json.loads(line))
                except ValueError:
                    continue
        return list(self._events)

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to release anything."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def metric_total(self, name: str) -> float:
        """Sum of all samples of one metric family on /metrics."""
        from prometheus_client.parser import text_string_to_metric_families

        _, body = self.get("/metrics")
        return sum(sample.value for family in text_string_to_metric_families(body)
                   for sample in family.samples if sample.name == name)

    def stop(self, timeout: float = 30.0) -> int:
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.returncode = self.process.returncode
        return self.returncode

    def __enter__(self) -> KpyschedProcess:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()
