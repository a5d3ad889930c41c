"""kpysched replicas under leader election, as the chart runs two: started, found,
killed and replaced, and sampled for memory and tasks.

Each replica is a real `kpysched run` process (tests.cluster.kpysched_process). The
leader is the one the Lease names; a killed or exited replica is replaced by a new
process, as a Deployment's ReplicaSet would.
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass, field
from typing import Any, Final

from tests.cluster import kubectl, procfs
from tests.cluster.kpysched_process import KpyschedProcess, scheduler_config
from tests.cluster.state import ClusterState
from tests.soak.churn import KPYSCHED

LEASE_NAMESPACE, LEASE_NAME = "kube-system", "kpysched-soak"
CONFIG: Final = scheduler_config(
    profiles=[{"schedulerName": KPYSCHED}],
    leaderElection={"leaderElect": True, "resourceNamespace": LEASE_NAMESPACE,
                    "resourceName": LEASE_NAME},
    clientConnection={"qps": 200, "burst": 400})


@dataclass
class Replica:
    process: KpyschedProcess
    serial: int
    rss_samples: list[int] = field(default_factory=list)
    task_samples: list[int] = field(default_factory=list)

    @property
    def identity(self) -> str:
        """The Lease identity it campaigns with (logged at start)."""
        for event in self.process.log_events():
            if event.get("event") == "leader.acquiring":
                return str(event.get("identity", ""))
        return ""

    @property
    def alive(self) -> bool:
        process = self.process.process
        return process is not None and process.poll() is None

    def rss_bytes(self) -> int:
        process = self.process.process
        return rss_bytes(process.pid) if process is not None else 0

    def dump(self) -> dict[str, Any] | None:
        """GET /debug/cache, or None when it does not answer."""
        try:
            status, body = self.process.get("/debug/cache")
        except OSError:
            return None
        return json.loads(body) if status == 200 else None

    def bound(self) -> list[tuple[str, str]]:
        """(timestamp, pod) of every binding this replica logged."""
        return [(str(e.get("timestamp")), str(e.get("pod"))) for e in self.process.log_events()
                if e.get("event") == "pod.bound"]


def rss_bytes(pid: int) -> int:
    """A process's resident memory now (VmRSS); 0 once it has exited."""
    kib = procfs.status_kib(pid, "VmRSS")
    return kib * 1024 if kib is not None else 0


class Replicas:
    """Keeps `count` replicas running; `replace_dead()` starts one for each that ended."""

    def __init__(self, state: ClusterState, count: int = 2) -> None:
        self.state = state
        self.count = count
        self.all: list[Replica] = []

    def _start(self, first: bool) -> Replica:
        process = KpyschedProcess(
            self.state, CONFIG, log_level="debug", extra_args=("--enable-cache-endpoint",),
            # The first leads. A replacement, like a Deployment's, need only be running:
            # after an etcd restart its informers may take minutes to sync (the
            # control plane is still recovering), and it stands by until they have;
            # with the API server itself still restarting, it waits to read its
            # /version first (release.waiting_for_api_server), which is running too.
            wait_for="scheduler.started" if first else ("scheduler.starting",
                                                         "release.waiting_for_api_server"))
        replica = Replica(process.start(), len(self.all))
        self.all.append(replica)
        return replica

    def start(self) -> None:
        for index in range(self.count):
            self._start(first=index == 0)

    @property
    def running(self) -> list[Replica]:
        return [r for r in self.all if r.alive]

    def leader(self) -> Replica | None:
        lease = kubectl.get_json(self.state, "lease", LEASE_NAME, "-n", LEASE_NAMESPACE)
        holder = lease.get("spec", {}).get("holderIdentity") or ""
        return next((r for r in self.running if holder and r.identity == holder), None)

    def replace_dead(self) -> None:
        for _ in range(self.count - len(self.running)):
            self._start(first=False)

    def signal_leader(self, signum: signal.Signals) -> Replica | None:
        leader = self.leader()
        if leader is None or leader.process.process is None:
            return None
        leader.process.process.send_signal(signum)
        leader.process.process.wait(60)
        return leader

    def sample(self) -> None:
        for replica in self.running:
            replica.rss_samples.append(replica.rss_bytes())
            dump = replica.dump()
            if dump is not None:
                replica.task_samples.append(int(dump["asyncioTasks"]))

    def stop(self) -> None:
        for replica in self.all:
            replica.process.stop()
