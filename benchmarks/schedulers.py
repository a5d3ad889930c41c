"""The schedulers under test, started the same way against a benchmark cluster.

kpysched-no-records is kpysched with `--decision-records=0` (no decision records for
`kpysched explain`), to measure what keeping them costs. The ceiling
(benchmarks/ceiling.py) places pods round robin with no real scheduling, writing what a
scheduler writes: the limit any out-of-process scheduler could reach here.

Each gets a KubeSchedulerConfiguration with one profile named after it, leader
election off and, when the caller asks, the same clientConnection qps/burst; when
not asked, the field is left out and each uses its own default (50/100 for both).
A workload may turn feature gates on (`--feature-gates`, the same for both) and give
the profile its plugins (kpysched's Coscheduling, which kube-scheduler lacks).
"""

from __future__ import annotations

import compileall
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tests.cluster import procfs
from tests.cluster.cluster import ClusterError, ClusterState, free_port, log_tail
from tests.cluster.gates import feature_gates_args
from tests.cluster.kpysched_process import KpyschedProcess
from tests.cluster.upstream import UpstreamScheduler

READY_TIMEOUT_SECONDS = 120.0
KPYSCHED = "kpysched"
KUBE_SCHEDULER = "kube-scheduler"
KPYSCHED_NO_RECORDS = "kpysched-no-records"
CEILING = "ceiling"
# Another checkout of kpysched measured in the same run as this one, for a before/after
# comparison of a change: KPYSCHED_BENCH_TREES="before=/tmp/kpy-old" adds the scheduler
# `kpysched-before`, run from that tree with this tree's Python environment.
TREES_ENV = "KPYSCHED_BENCH_TREES"


def _trees() -> dict[str, Path]:
    trees: dict[str, Path] = {}
    for item in filter(None, os.environ.get(TREES_ENV, "").split(",")):
        label, _, path = item.partition("=")
        if not label or not (Path(path) / "kpysched" / "cli.py").is_file():
            raise SystemExit(f"error: {TREES_ENV} item {item!r} must be label=<kpysched checkout>")
        trees[f"{KPYSCHED}-{label}"] = Path(path).resolve()
    return trees


TREES = _trees()
NAMES = (KPYSCHED, KUBE_SCHEDULER, KPYSCHED_NO_RECORDS, CEILING, *TREES)
# The client rate both schedulers default to (clientConnection qps/burst), for the
# ceiling when the run leaves them out.
DEFAULT_QPS, DEFAULT_BURST = 50.0, 100
# Each kpysched variant and the arguments it adds to `kpysched run`.
KPYSCHED_VARIANTS: dict[str, tuple[str, ...]] = {
    KPYSCHED: (),
    KPYSCHED_NO_RECORDS: ("--decision-records=0",),
    **{name: () for name in TREES},
}
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# The kpysched trees whose modules were compiled to bytecode by this run.
_COMPILED: set[Path] = set()


def this_tree() -> Path:
    """The checkout whose kpysched this process imports (the `kpysched` scheduler's)."""
    spec = importlib.util.find_spec("kpysched")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).resolve().parent.parent


def compile_tree(tree: Path) -> None:
    """Compile `tree`'s kpysched modules to bytecode, once per run, before its scheduler
    starts. The image does so at install (Dockerfile), so a deployed kpysched never
    compiles its source; a checkout run with PYTHONDONTWRITEBYTECODE set (this machine's
    environment) never keeps the bytecode, and every start compiled its ~320 modules
    afresh: 0.4-0.6 s of CPU, counted in the scheduler's CPU per pod. Up-to-date files
    are only checked."""
    tree = tree.resolve()
    if tree not in _COMPILED:
        compileall.compile_dir(tree / "kpysched", quiet=1)
        _COMPILED.add(tree)


def scheduler_config(profile_name: str, qps: float | None, burst: int | None,
                     plugins: Mapping[str, Any] | None = None,
                     extenders: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    profile: dict[str, Any] = {"schedulerName": profile_name}
    if plugins is not None:
        profile["plugins"] = dict(plugins)
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [profile],
    }
    connection: dict[str, Any] = {}
    if qps is not None:
        connection["qps"] = qps
    if burst is not None:
        connection["burst"] = burst
    if connection:
        config["clientConnection"] = connection
    if extenders:
        config["extenders"] = extenders
    return config


@dataclass(frozen=True, slots=True)
class ProcStats:
    cpu_seconds: float  # user + system, all threads, since the process started
    peak_rss_mib: float  # VmHWM


def proc_stats(pid: int) -> ProcStats:
    fields = procfs.stat_fields(pid)
    peak_kib = procfs.status_kib(pid, "VmHWM")
    if fields is None or peak_kib is None:
        raise ProcessLookupError(f"no process {pid} to measure")
    cpu = (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime, stime
    return ProcStats(cpu, peak_kib / 1024)


class SchedulerUnderTest(Protocol):
    name: str

    @property
    def pid(self) -> int: ...

    @property
    def log_path(self) -> Path: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def ready(self) -> bool: ...

    def metrics_text(self) -> str: ...


class Kpysched:
    def __init__(self, state: ClusterState, config: dict[str, Any],
                 name: str = KPYSCHED, feature_gates: Mapping[str, bool] | None = None
                 ) -> None:
        self.name = name
        # info is kpysched's default level; it logs nothing per pod that is placed.
        # KPYSCHED_DECISION_RECORDS from the caller's environment is dropped: the
        # variant's flag alone decides whether decisions are recorded.
        env = {k: v for k, v in os.environ.items() if k != "KPYSCHED_DECISION_RECORDS"}
        # In a session of its own, as kube-scheduler (upstream.py) and every component of
        # the cluster are started: each session is an autogroup, and the kernel shares the
        # CPU between autogroups first. Left in the benchmark's session, kpysched shared
        # one group with the runner and whatever else ran from its shell, at that
        # shell's autogroup nice (this machine lowers a group to 19 once it runs niced
        # work, and a fresh one starts at 0): measured, a spinner there got 0.05 s of CPU
        # in 0.8 s beside one in a fresh session on the same core.
        self._process = KpyschedProcess(
            state, config, log_level="info",
            extra_args=(*KPYSCHED_VARIANTS[name], *feature_gates_args(feature_gates or {})),
            new_session=True)
        self._process.env = {**env, "KPYSCHED_KUBECONFIG": state.kubeconfig}
        if name in TREES:
            # -P: the working directory's kpysched must not shadow the other tree's.
            self._process.command[1:1] = ["-P"]
            self._process.env["PYTHONPATH"] = str(TREES[name])
        compile_tree(TREES.get(name) or this_tree())

    @property
    def pid(self) -> int:
        assert self._process.process is not None
        return self._process.process.pid

    @property
    def log_path(self) -> Path:
        return self._process.log_path

    def start(self) -> None:
        self._process.start()

    def stop(self) -> None:
        self._process.stop()

    def ready(self) -> bool:
        try:
            return self._process.get("/readyz")[0] == 200
        except (urllib.error.URLError, OSError):
            return False

    def metrics_text(self) -> str:
        status, body = self._process.get("/metrics")
        if status != 200:
            raise ClusterError(f"kpysched /metrics answered {status}")
        return body


class KubeScheduler:
    name = KUBE_SCHEDULER

    def __init__(self, state: ClusterState, config: dict[str, Any],
                 feature_gates: Mapping[str, bool] | None = None) -> None:
        self._process = UpstreamScheduler(state, config, feature_gates=feature_gates)

    @property
    def pid(self) -> int:
        assert self._process.process is not None
        return self._process.process.pid

    @property
    def log_path(self) -> Path:
        return self._process.log_path

    def start(self) -> None:
        self._process.start()

    def stop(self) -> None:
        self._process.stop()

    def ready(self) -> bool:
        try:
            return self._process.get("/readyz").strip() == "ok"
        except (urllib.error.URLError, OSError):
            return False

    def metrics_text(self) -> str:
        return self._process.metrics()


class Ceiling:
    """benchmarks/ceiling.py as a process, with the run's client QPS and burst."""

    name = CEILING

    def __init__(self, state: ClusterState, qps: float | None, burst: int | None) -> None:
        workdir = Path(tempfile.mkdtemp(prefix="ceiling-", dir=state.dir))
        self.log_path = workdir / "ceiling.log"
        self._port = free_port()
        self._command = [
            sys.executable, "-m", "benchmarks.ceiling", "--kubeconfig", state.kubeconfig,
            "--scheduler-name", CEILING, "--port", str(self._port),
            "--qps", str(DEFAULT_QPS if qps is None else qps),
            "--burst", str(DEFAULT_BURST if burst is None else burst)]
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(self._command, stdout=log,
                                             stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL,
                                             start_new_session=True)  # as Kpysched's

    def stop(self) -> None:
        if self._process is None or self._process.poll() is not None:
            return
        self._process.send_signal(signal.SIGTERM)
        try:
            self._process.wait(30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _get(self, path: str) -> tuple[int, str]:
        if self._process is not None and self._process.poll() is not None:
            raise ClusterError(f"the ceiling exited with {self._process.returncode}; last "
                               f"lines of {self.log_path}:\n{log_tail(self.log_path)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self._port}{path}",
                                        timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def ready(self) -> bool:
        try:
            return self._get("/readyz")[0] == 200
        except (urllib.error.URLError, OSError):
            return False

    def metrics_text(self) -> str:
        return self._get("/metrics")[1]


def make(name: str, state: ClusterState, qps: float | None, burst: int | None, *,
         feature_gates: Mapping[str, bool] | None = None,
         plugins: Mapping[str, Any] | None = None,
         extenders: list[dict[str, Any]] | None = None) -> SchedulerUnderTest:
    config = scheduler_config(name, qps, burst, plugins, extenders)
    if name in KPYSCHED_VARIANTS:
        return Kpysched(state, config, name, feature_gates)
    if name == KUBE_SCHEDULER:
        return KubeScheduler(state, config, feature_gates)
    if name == CEILING:
        return Ceiling(state, qps, burst)
    raise ValueError(f"unknown scheduler {name!r}; choose from {', '.join(NAMES)}")


def wait_ready(scheduler: SchedulerUnderTest) -> None:
    """Until /readyz says ok: informers synced, the loop is about to pop pods."""
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if scheduler.ready():
            return
        time.sleep(0.1)
    raise ClusterError(f"{scheduler.name} not ready after {READY_TIMEOUT_SECONDS:.0f}s; "
                       f"last lines of {scheduler.log_path}:\n{log_tail(scheduler.log_path)}")
