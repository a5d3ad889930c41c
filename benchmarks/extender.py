"""The test extender (tests/extender) as a process beside the scheduler under test,
for workloads that configure one (Workload.extender_delay_ms): it answers filter and
prioritize after a fixed delay, with node names (nodeCacheCapable, as an extender
meant for large clusters is set), and its CPU is its own, not the scheduler's."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from tests.cluster.cluster import ClusterError, ClusterState

ROUTE = "bench"


@dataclass
class BenchExtender:
    process: subprocess.Popen[str]
    url: str

    def config(self) -> list[dict[str, Any]]:
        """The scheduler config's `extenders:`."""
        return [{"urlPrefix": f"{self.url}/{ROUTE}", "filterVerb": "filter",
                 "prioritizeVerb": "prioritize", "weight": 1, "nodeCacheCapable": True}]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(state: ClusterState, delay_ms: float) -> BenchExtender:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.extender", "--kubeconfig", state.kubeconfig,
         "--route", ROUTE, "--delay-ms", str(delay_ms)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    url = process.stdout.readline().strip()  # its first line, once it serves
    if not url.startswith("http"):
        process.kill()
        raise ClusterError(f"the test extender did not start (exit {process.wait()})")
    return BenchExtender(process, url)
