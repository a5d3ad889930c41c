"""Differential: scheduler extenders (issue 35). kube-scheduler v1.36.4 and kpysched
each run with the same `extenders:` (extender_scenarios.py), each against a test
extender instance of its own (tests/extender); every scenario must end the same
(node, FailedScheduling text, victims) and each instance must have been sent the
same requests (extender_records.py says what "the same" leaves out).

One scheduler start per side serves every scenario: each extender manages a
resource of its own, and a scenario's pod requests the resources of the extenders
it is about.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import pytest

from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess, scheduler_config
from tests.cluster.upstream import UpstreamScheduler
from tests.e2e.differential.compare import (
    KPYSCHED,
    UPSTREAM,
    TwinApis,
    Twins,
    both,
    check_kind,
)
from tests.e2e.differential.conftest import _remove_leftover_nodes
from tests.e2e.differential.extender_records import Recorder, text
from tests.e2e.differential.extender_scenarios import (
    SCENARIOS,
    ExtenderScenario,
    extenders_config,
    serving_routes,
)
from tests.e2e.differential.model import Outcome
from tests.e2e.differential.runner import ensure_priority_classes, run_scenario
from tests.extender import tls
from tests.extender.server import ExtenderServer, Tls

pytestmark = pytest.mark.e2e


@dataclass(frozen=True)
class Recorders:
    upstream: Recorder
    kpysched: Recorder


def _serve(stack: ExitStack, state: ClusterState, certificate: Tls,
           ca_file: str) -> tuple[Recorder, list[dict[str, object]]]:
    """An HTTP and an HTTPS instance for one scheduler, and the extenders naming them."""
    http = stack.enter_context(ExtenderServer(serving_routes(False), state.kubeconfig))
    https = stack.enter_context(ExtenderServer(serving_routes(True), state.kubeconfig,
                                               tls=certificate))
    return Recorder((http, https)), extenders_config(http.url, https.url, ca_file)


@pytest.fixture(scope="module")
def extender_schedulers(twins: Twins, tmp_path_factory: pytest.TempPathFactory,
                        ) -> Iterator[Recorders]:
    """Both schedulers with the extenders, one instance set each, for the module. Both
    clusters start with no Node (see conftest.twin_schedulers)."""
    for state in (twins.upstream, twins.kpysched):
        asyncio.run(_remove_leftover_nodes(state))
    certificate, ca_file = tls.make(tmp_path_factory.mktemp("extender-tls"))
    with ExitStack() as stack:
        upstream, upstream_extenders = _serve(stack, twins.upstream, certificate,
                                              str(ca_file))
        ours, our_extenders = _serve(stack, twins.kpysched, certificate, str(ca_file))
        stack.enter_context(UpstreamScheduler(twins.upstream, {"extenders": upstream_extenders}))
        stack.enter_context(KpyschedProcess(twins.kpysched, scheduler_config(
            [{"schedulerName": KPYSCHED}], leaderElection={"leaderElect": False},
            extenders=our_extenders), log_level="info"))
        yield Recorders(upstream, ours)


def _comparable(outcome: Outcome) -> Outcome:
    return dataclasses.replace(
        outcome, message=text(outcome.message) if outcome.message is not None else None)


@pytest.mark.parametrize("case", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_same_decision_and_requests_as_kube_scheduler(
        extender_schedulers: Recorders, twin_apis: TwinApis, case: ExtenderScenario) -> None:
    recorders = extender_schedulers
    recorders.upstream.begin()
    recorders.kpysched.begin()
    await ensure_priority_classes(twin_apis.upstream)
    await ensure_priority_classes(twin_apis.kpysched)
    upstream, ours = await both(
        run_scenario(twin_apis.upstream, case.scenario, UPSTREAM, recorders.upstream.decided),
        run_scenario(twin_apis.kpysched, case.scenario, KPYSCHED, recorders.kpysched.decided))
    upstream, ours = _comparable(upstream), _comparable(ours)
    upstream_calls, our_calls = recorders.upstream.calls(), recorders.kpysched.calls()
    check_kind(case.scenario, upstream)
    assert upstream_calls.keys() == case.calls, upstream_calls.first
    assert ours == upstream, f"\n upstream: {upstream.describe()}\n kpysched: {ours.describe()}"
    differences = upstream_calls.differences(our_calls)
    assert not differences, "\n".join(differences)
