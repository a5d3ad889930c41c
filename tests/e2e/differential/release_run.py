"""Running a release case (release_scenarios.py) under kube-scheduler of one release and
kpysched on that release's twin clusters, and checking an outcome against the
release's expectation: what a case needs beyond the scenario model (CSIDrivers with
fields the model has no word for, DeviceTaintRules where served, the bind-once
webhook, an existing pod deleted once the incoming one has failed) is made here."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import client

from tests.cluster import kube, releases
from tests.e2e.differential.compare import KPYSCHED, UPSTREAM, TwinApis, both, check_kind
from tests.e2e.differential.model import Outcome, Scenario
from tests.e2e.differential.release_bind_once import BindOnce
from tests.e2e.differential.runner import (
    OUTCOME_TIMEOUT_SECONDS,
    ensure_priority_classes,
    run_scenario,
)

# DeviceTaintRules are served (resource.k8s.io/v1) from this minor release on.
DEVICE_TAINT_RULES_FROM = 37


@dataclass(frozen=True)
class Expected:
    """Upstream's outcome under one release: the node (None: not bound) and what its
    first FailedScheduling note holds and lacks."""

    node: str | None
    holds: tuple[str, ...] = ()
    lacks: tuple[str, ...] = ()
    # check_kind's word for it, when not "bound" (a node) or "pending" (none).
    kind: str | None = None

    @property
    def scenario_kind(self) -> str:
        return self.kind or ("bound" if self.node else "pending")

    def excludes(self, other: Expected) -> bool:
        """No one outcome can meet both: another node, or a text one must hold that
        holds one the other must lack."""
        def clash(holds: tuple[str, ...], lacks: tuple[str, ...]) -> bool:
            return any(lacked in held for held in holds for lacked in lacks)

        return (self.node != other.node or clash(self.holds, other.lacks)
                or clash(other.holds, self.lacks))

    def problems(self, outcome: Outcome) -> list[str]:
        note = outcome.message or ""
        found = [f"node {outcome.node}, not {self.node}"] if outcome.node != self.node else []
        found += [f"note lacks {text!r}" for text in self.holds if text not in note]
        found += [f"note holds {text!r}" for text in self.lacks if text in note]
        return found


def check_release(name: str, expected: Mapping[str, Expected], release: str,
                  outcome: Outcome) -> None:
    """`outcome` (upstream's) is the one `release` gives, which no other release does."""
    assert set(expected) == set(releases.RELEASES), f"{name}: an outcome per release"
    mine = expected[release]
    assert all(mine.excludes(other) for r, other in expected.items() if r != release), (
        f"{name}: release {release}'s outcome must exclude every other release's")
    problems = mine.problems(outcome)
    assert not problems, f"{name} on {release}: {problems}\n {outcome.describe()}"


@dataclass(frozen=True)
class ReleaseCase:
    scenario: Scenario
    expected: Mapping[str, Expected]  # release ("1.36") -> upstream's outcome there
    # CSIDriver bodies the scenario needs beyond the model's (fields it has no word for),
    # made before the scenario and deleted after it, on each twin.
    csi_drivers: tuple[dict[str, Any], ...] = field(default=())
    # DeviceTaintRule bodies (resource.k8s.io/v1), made likewise where the API server
    # serves them (from v1.37; a v1.36 API server refuses them as unknown).
    device_taint_rules: tuple[dict[str, Any], ...] = field(default=())
    # The bind-once webhook (release_bind_once.py) fails the first binding of each of
    # the scenario's pods (its namespace carries BIND_ONCE_LABEL).
    first_binding_fails: bool = False
    # An existing pod (role) deleted once the incoming pod's first FailedScheduling is
    # out: what a queueing hint makes of the deletion. It does not count as a victim.
    delete_after_failure: str | None = None

    @property
    def name(self) -> str:
        return self.scenario.name


async def _make_csi_drivers(api: client.ApiClient, bodies: tuple[dict[str, Any], ...]) -> None:
    storage = client.StorageV1Api(api)
    for body in bodies:
        await storage.create_csi_driver(body)


async def _delete_csi_drivers(api: client.ApiClient, bodies: tuple[dict[str, Any], ...],
                              ) -> None:
    storage = client.StorageV1Api(api)
    for body in bodies:
        await storage.delete_csi_driver(body["metadata"]["name"])


_TAINT_RULES = "/apis/resource.k8s.io/v1/devicetaintrules"
_JSON = {"Content-Type": "application/json", "Accept": "application/json"}


async def _make_taint_rules(api: client.ApiClient, bodies: tuple[dict[str, Any], ...],
                            release: str) -> None:
    """The rules, on a release that serves them; refused as unknown on one that does
    not (a sign the case's premise holds)."""
    served = releases.get(release).minor >= DEVICE_TAINT_RULES_FROM
    for body in bodies:
        try:
            await api.call_api(_TAINT_RULES, "POST", body=body, header_params=_JSON,
                               auth_settings=["BearerToken"], _return_http_data_only=True)
        except client.ApiException as error:
            if served or error.status != 404:
                raise
        else:
            assert served, f"a v{release} API server made a DeviceTaintRule"


async def _delete_taint_rules(api: client.ApiClient, bodies: tuple[dict[str, Any], ...],
                              release: str) -> None:
    if releases.get(release).minor < DEVICE_TAINT_RULES_FROM:
        return
    for body in bodies:
        await api.call_api(f"{_TAINT_RULES}/{body['metadata']['name']}", "DELETE",
                           header_params=_JSON, auth_settings=["BearerToken"],
                           _return_http_data_only=True)


async def _run(api: client.ApiClient, case: ReleaseCase, scheduler: str, release: str,
               bind_once: BindOnce | None) -> Outcome:
    await ensure_priority_classes(api)
    admission = client.AdmissionregistrationV1Api(api)
    webhook = None
    if case.first_binding_fails:
        assert bind_once is not None, f"{case.name} needs the bind-once webhook"
        webhook = bind_once.configuration()
        await admission.create_validating_webhook_configuration(webhook)
    await _make_csi_drivers(api, case.csi_drivers)
    await _make_taint_rules(api, case.device_taint_rules, release)
    try:
        if case.delete_after_failure is None:
            return await run_scenario(api, case.scenario, scheduler)
        # The run's namespace is made inside run_scenario: a label of this run's own
        # finds it (an earlier run's may still be terminating).
        mark = secrets.token_hex(4)
        scenario = dataclasses.replace(case.scenario, namespace_labels={
            **case.scenario.namespace_labels, _RUN_LABEL: mark})
        outcome, _ = await asyncio.gather(
            run_scenario(api, scenario, scheduler),
            _delete_after_failure(api, mark, case.delete_after_failure))
        return dataclasses.replace(outcome,
                                   victims=outcome.victims - {case.delete_after_failure})
    finally:
        await _delete_taint_rules(api, case.device_taint_rules, release)
        await _delete_csi_drivers(api, case.csi_drivers)
        if webhook is not None:
            await admission.delete_validating_webhook_configuration(
                webhook["metadata"]["name"])


_RUN_LABEL = "kpysched.test/release-run"


async def _delete_after_failure(api: client.ApiClient, mark: str, role: str) -> None:
    """Delete pod `role` of the run marked `mark` once its incoming pod has failed."""
    core = client.CoreV1Api(api)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + OUTCOME_TIMEOUT_SECONDS
    namespace: str | None = None
    while loop.time() < deadline:
        if namespace is None:
            listed = await core.list_namespace(label_selector=f"{_RUN_LABEL}={mark}")
            namespace = listed.items[0].metadata.name if listed.items else None
        if namespace is not None and await kube.events(api, namespace, "FailedScheduling",
                                                       regarding="incoming"):
            await core.delete_namespaced_pod(role, namespace, grace_period_seconds=0)
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"no FailedScheduling for the incoming pod of run {mark}")


async def follows_release(apis: TwinApis, case: ReleaseCase, release: str,
                          bind_once: BindOnce | None = None) -> None:
    """The case under kube-scheduler of `release` and under kpysched (which took that
    release from the cluster): upstream's outcome is this release's, and kpysched's is
    upstream's."""
    upstream, ours = await both(_run(apis.upstream, case, UPSTREAM, release, bind_once),
                                _run(apis.kpysched, case, KPYSCHED, release, bind_once))
    expected = case.expected[release]
    check_kind(dataclasses.replace(case.scenario, expect_node=expected.node,
                                   expect=expected.scenario_kind), upstream)
    check_release(case.name, case.expected, release, upstream)
    assert ours == upstream, (f"\n upstream: {upstream.describe()}\n kpysched: "
                              f"{ours.describe()}")
