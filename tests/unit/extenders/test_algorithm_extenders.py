"""The algorithm with extenders, against upstream's findNodesThatPassExtenders and
prioritizeNodes (pkg/scheduler/schedule_one.go) and HTTPExtender (extender.go), with a
real extender on loopback (tests/unit/extenders/server.py)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from typing import Any

import pytest

from kpysched.config import ConfigError
from kpysched.config.extenders import Extender
from kpysched.decisions.record import Decision
from kpysched.extenders.registry import Extenders
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.status import Code, Status
from kpysched.objects.pod import PodInfo
from kpysched.scheduling.algorithm import Algorithm, ScheduleResult
from tests.unit.builders import make_node, make_pod, make_snapshot
from tests.unit.extenders.server import FakeExtender, names_of, serving
from tests.unit.framework.fake_plugins import Script, build, fake

FILTER = fake("FilterA", "filter")
SCORE = fake("Score", "preScore", "score")


@pytest.fixture
def extender() -> Iterator[FakeExtender]:
    with serving(FakeExtender()) as running:
        yield running


_BUILT: list[Extenders] = []


@pytest.fixture(autouse=True)
def _close_extenders() -> Iterator[None]:
    yield
    while _BUILT:
        asyncio.run(_BUILT.pop().close())


def _extenders(*configs: dict[str, Any]) -> Extenders:
    built = Extenders([Extender.model_validate(config) for config in configs])
    _BUILT.append(built)
    return built


def _schedule(extenders: Extenders, info: PodInfo | None = None, *,
              taint_n1: bool = False, seed: int = 0,
              state: CycleState | None = None) -> ScheduleResult | Diagnosis | Status:
    reject = {"n1": Status.unresolvable("node(s) had untolerated taint {a: b}")} \
        if taint_n1 else {}
    framework = build({"filter": ["FilterA"], "preScore": ["Score"], "score": ["Score"]},
                      FILTER, SCORE, scripts={"FilterA": Script(reject=reject),
                                              "Score": Script()})
    snapshot = make_snapshot(*(make_node(name).capacity(cpu="4", memory="8Gi", pods="110").info()
                               for name in ("n1", "n2", "n3")))
    algorithm = Algorithm(rng=random.Random(seed), extenders=extenders)
    return algorithm.schedule(framework, state or CycleState(),
                              info or make_pod("p").req(cpu="100m").info(), snapshot)


def _keep(*names: str, reason: str = "extender says no",
          unresolvable: bool = False) -> Any:
    def answer(body: dict[str, Any]) -> tuple[int, Any]:
        given = names_of(body)
        kept = [name for name in given if name in names]
        failed = {name: reason for name in given if name not in names}
        key = "FailedAndUnresolvableNodes" if unresolvable else "FailedNodes"
        if body["NodeNames"] is not None:
            return 200, {"NodeNames": kept, key: failed, "Error": ""}
        items = [item for item in body["Nodes"]["items"] if item["metadata"]["name"] in kept]
        return 200, {"Nodes": {"items": items}, key: failed, "Error": ""}
    return answer


@pytest.mark.parametrize("cache_capable", [pytest.param(True, id="node-names"),
                                           pytest.param(False, id="whole-nodes")])
def test_filter_sends_the_feasible_nodes_and_counts_its_reasons(
        extender: FakeExtender, cache_capable: bool) -> None:
    extender.answers["filter"] = _keep()
    outcome = _schedule(_extenders({"urlPrefix": extender.url, "filterVerb": "filter",
                                    "nodeCacheCapable": cache_capable}), taint_n1=True)
    assert isinstance(outcome, Diagnosis)
    assert outcome.message() == ("0/3 nodes are available: 1 node(s) had untolerated taint "
                                 "{a: b}, 2 extender says no.")
    assert "Extender" in outcome.unschedulable_plugins
    ((verb, body),) = extender.requests
    assert verb == "filter"
    assert body["Pod"]["metadata"]["name"] == "p"
    assert sorted(names_of(body)) == ["n2", "n3"]
    if cache_capable:
        assert body["Nodes"] is None
    else:
        assert body["NodeNames"] is None and body["Nodes"]["metadata"] == {}


def test_unresolvable_reasons_win_over_plain_ones(extender: FakeExtender) -> None:
    extender.answers["filter"] = lambda body: (200, {
        "NodeNames": [], "FailedNodes": {"n1": "plain", "n2": "plain"},
        "FailedAndUnresolvableNodes": {"n2": "final"}})
    outcome = _schedule(_extenders({"urlPrefix": extender.url, "filterVerb": "filter",
                                    "nodeCacheCapable": True}))
    assert isinstance(outcome, Diagnosis)
    assert outcome.node_to_status["n1"].code == Code.UNSCHEDULABLE
    assert outcome.node_to_status["n2"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert outcome.node_to_status["n2"].reasons == ["final"]


def test_one_node_left_is_taken_without_prioritizing(extender: FakeExtender) -> None:
    extender.answers["filter"] = _keep("n3")
    outcome = _schedule(_extenders({"urlPrefix": extender.url, "filterVerb": "filter",
                                    "prioritizeVerb": "prioritize", "weight": 1}))
    assert isinstance(outcome, ScheduleResult) and outcome.node_name == "n3"
    assert [verb for verb, _ in extender.requests] == ["filter"]


@pytest.mark.parametrize(("answer", "expected"), [
    pytest.param(lambda body: (500, None), "failed filter with extender at URL {url}/filter, "
                 "code 500", id="http-500"),
    pytest.param(lambda body: (200, {"Error": "gpu inventory unavailable"}),
                 "gpu inventory unavailable", id="error-in-answer"),
    pytest.param(lambda body: (200, {"NodeNames": ["elsewhere"]}),
                 'extender "{url}" claims a filtered node "elsewhere" which is not found in '
                 "the input node list", id="unknown-node"),
])
def test_a_failing_extender_fails_the_cycle_with_upstreams_text(
        extender: FakeExtender, answer: Any, expected: str) -> None:
    extender.answers["filter"] = answer
    outcome = _schedule(_extenders({"urlPrefix": extender.url, "filterVerb": "filter",
                                    "nodeCacheCapable": True}))
    assert isinstance(outcome, Status) and outcome.code == Code.ERROR
    assert outcome.message() == expected.format(url=extender.url)


def test_an_ignorable_extenders_failure_is_skipped(extender: FakeExtender) -> None:
    extender.answers["filter"] = lambda body: (500, None)
    outcome = _schedule(_extenders({"urlPrefix": extender.url, "filterVerb": "filter",
                                    "ignorable": True}))
    assert isinstance(outcome, ScheduleResult)


def test_unreachable_and_slow_extenders_read_as_gos_errors(extender: FakeExtender) -> None:
    refused = _schedule(_extenders({"urlPrefix": "http://127.0.0.1:1/x",
                                    "filterVerb": "filter"}))
    assert isinstance(refused, Status)
    assert refused.message() == ('Post "http://127.0.0.1:1/x/filter": dial tcp 127.0.0.1:1: '
                                 "connect: connection refused")
    extender.delay = 0.5
    extender.answers["filter"] = _keep("n1", "n2", "n3")
    slow = _schedule(_extenders({"urlPrefix": extender.url, "filterVerb": "filter",
                                 "httpTimeout": "50ms"}))
    assert isinstance(slow, Status)
    assert slow.message() == (f'Post "{extender.url}/filter": context deadline exceeded '
                              "(Client.Timeout exceeded while awaiting headers)")


def test_managed_resources_limit_the_pods_an_extender_sees(extender: FakeExtender) -> None:
    extender.answers["filter"] = _keep()
    extenders = _extenders({"urlPrefix": extender.url, "filterVerb": "filter",
                            "managedResources": [{"name": "example.com/gpu"}]})
    assert isinstance(_schedule(extenders), ScheduleResult)
    assert extender.requests == []
    gpu_pod = make_pod("gpu").req({"cpu": "100m", "example.com/gpu": "1"}).info()
    assert isinstance(_schedule(extenders, gpu_pod), Diagnosis)
    init_gpu_pod = make_pod("init").init_req({"example.com/gpu": "1"}).info()
    assert isinstance(_schedule(extenders, init_gpu_pod), Diagnosis)
    assert len(extender.requests) == 2


def test_prioritize_scores_are_weighted_and_scaled(extender: FakeExtender) -> None:
    extender.answers["prioritize"] = lambda body: (200, [
        {"Host": name, "Score": 10 if name == "n2" else 0} for name in names_of(body)])
    state = CycleState()
    state.decision = Decision("default/p", "uid", "kpysched", 1, "now")
    outcome = _schedule(_extenders({"urlPrefix": extender.url, "prioritizeVerb": "prioritize",
                                    "weight": 3}), state=state)
    assert isinstance(outcome, ScheduleResult) and outcome.node_name == "n2"
    (said,) = state.decision.extenders
    assert (said.verb, said.scores) == ("prioritize", {"n1": 0, "n2": 300, "n3": 0})


def test_prioritize_errors_are_ignored_even_when_not_ignorable(extender: FakeExtender) -> None:
    extender.answers["prioritize"] = lambda body: (500, None)
    outcome = _schedule(_extenders({"urlPrefix": extender.url, "prioritizeVerb": "prioritize",
                                    "weight": 1}))
    assert isinstance(outcome, ScheduleResult)


def test_ignorable_extenders_are_asked_after_the_others(extender: FakeExtender) -> None:
    extenders = _extenders({"urlPrefix": extender.url + "/ignorable", "ignorable": True},
                           {"urlPrefix": extender.url + "/required"})
    assert [e.name for e in extenders] == [extender.url + "/required",
                                           extender.url + "/ignorable"]


def test_connections_are_kept_alive(extender: FakeExtender) -> None:
    extender.answers["filter"] = _keep("n1", "n2", "n3")
    extenders = _extenders({"urlPrefix": extender.url, "filterVerb": "filter",
                            "nodeCacheCapable": True})
    for _ in range(5):
        assert isinstance(_schedule(extenders), ScheduleResult)
    assert len(extender.requests) == 5
    assert len(extender.connections) == 1


@pytest.mark.parametrize(("prefix", "reason"), [
    pytest.param("extender:8888/x", 'unsupported protocol scheme "extender"', id="no-scheme"),
    pytest.param("http:///x", "http: no Host in request URL", id="no-host"),
])
def test_an_unusable_url_prefix_fails_each_call_as_gos_client_does(
        prefix: str, reason: str) -> None:
    outcome = _schedule(_extenders({"urlPrefix": prefix, "filterVerb": "filter"}))
    assert isinstance(outcome, Status)
    assert outcome.message() == f'Post "{prefix}/filter": {reason}'


def test_certificates_that_cannot_be_loaded_stop_start_up() -> None:
    with pytest.raises(ConfigError) as refused:
        _extenders({"urlPrefix": "https://e", "tlsConfig": {"caFile": "/nonexistent/ca.crt"}})
    assert list(refused.value.problems) == [
        "extenders[0].tlsConfig: cannot load its certificates: No such file or directory"]
