"""The secure port's own series, when the port is served by a front process
(kpysched.serving.front): what the front counts, and what the scheduler process counts
about the front and about the requests the front forwarded.

Each side keeps its series in a registry of its own. The front appends its exposition
to the backend's /metrics answer (kpysched.serving.forward), so one scrape shows both
processes; the names below are distinct from each other and from
kpysched.metrics.SchedulerMetrics', so no name appears twice. Counters are exposed
without `_created` samples, as upstream's are."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Final

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest

FRONT_REQUESTS: Final = "kpysched_serving_front_requests_total"
FRONT_CONNECTIONS: Final = "kpysched_serving_front_open_connections"
FRONT_BACKEND_ERRORS: Final = "kpysched_serving_front_backend_errors_total"
BACKEND_REQUESTS: Final = "kpysched_serving_backend_requests_total"
FRONT_RESTARTS: Final = "kpysched_serving_front_restarts_total"
FRONT_UP: Final = "kpysched_serving_front_up"


class _Collector:
    def __init__(self, collect: Callable[[], Iterator[Metric]]) -> None:
        self.collect = collect


class FrontMetrics:
    """Counted in the front process; safe from its one event loop."""

    def __init__(self, open_connections: Callable[[], int]) -> None:
        self._codes: Counter[str] = Counter()
        self.backend_errors = 0
        self._open_connections = open_connections
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_Collector(self._collect))

    def answered(self, code: int) -> None:
        self._codes[str(code)] += 1

    def render(self) -> bytes:
        return generate_latest(self._registry)

    def _collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            FRONT_REQUESTS, "Requests the secure port's front process answered, by HTTP "
            "code: its own refusals (401, 403) and what it forwarded to the scheduler "
            "process.", labels=["code"])
        for code, count in sorted(self._codes.items()):
            requests.add_metric([code], count)
        yield requests
        yield GaugeMetricFamily(FRONT_CONNECTIONS, "Connections open on the secure port "
                                "(held by the front process).", value=self._open_connections())
        yield CounterMetricFamily(FRONT_BACKEND_ERRORS, "Authorized requests the front "
                                  "could not forward: the scheduler process did not answer "
                                  "on its Unix socket.", value=self.backend_errors)


class BackendMetrics:
    """Counted in the scheduler process: by the backend server's thread and by the
    thread that watches the front."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests = 0
        self._restarts = 0
        self._up = False
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_Collector(self._collect))

    @property
    def requests(self) -> int:
        return self._requests

    @property
    def restarts(self) -> int:
        return self._restarts

    def request(self) -> None:
        with self._lock:
            self._requests += 1

    def front_restarted(self) -> None:
        with self._lock:
            self._restarts += 1

    def front_up(self, up: bool) -> None:
        self._up = up

    def render(self) -> bytes:
        return generate_latest(self._registry)

    def _collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(BACKEND_REQUESTS, "Requests the scheduler process "
                                  "answered for the secure port's front process, which "
                                  "forwards only authorized ones.", value=self._requests)
        yield CounterMetricFamily(FRONT_RESTARTS, "Times the secure port's front process "
                                  "exited and was started again.", value=self._restarts)
        yield GaugeMetricFamily(FRONT_UP, "1 while the secure port's front process runs.",
                                value=1 if self._up else 0)
