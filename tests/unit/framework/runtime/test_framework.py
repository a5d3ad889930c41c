"""Framework (framework/runtime/framework.py) against upstream's frameworkImpl
(pkg/scheduler/framework/runtime/framework.go, waiting_pods_map.go)."""

from __future__ import annotations

import asyncio

import pytest

from kpysched.config.features import Features
from kpysched.framework.cluster_events import (
    ASSIGNED_POD_DELETE,
    EVERYTHING,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Registration,
    Resource,
    with_hints,
)
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import NodeScore
from kpysched.framework.runtime import Framework, FrameworkError
from kpysched.framework.status import Code, Status
from kpysched.objects.pod import PodInfo
from tests.unit.builders import make_node, make_pod
from tests.unit.framework.fake_plugins import Script, SharedHandle, build, fake

FILTER_A = fake("FilterA", "preFilter", "filter")
FILTER_B = fake("FilterB", "preFilter", "filter")
SCORE_A = fake("ScoreA", "preScore", "score")
SCORE_B = fake("ScoreB", "preScore", "score")
NORMALIZED = fake("Normalized", "score", "normalize")
RESERVE_A = fake("ReserveA", "reserve")
RESERVE_B = fake("ReserveB", "reserve")
RESERVE_C = fake("ReserveC", "reserve")
PERMIT_A = fake("PermitAlpha", "permit")
PERMIT_B = fake("PermitBeta", "permit")
BIND_A = fake("BindA", "bind")
BIND_B = fake("BindB", "bind")
ONLY_FILTER = fake("OnlyFilter", "filter")

NODES = [make_node(name).capacity(cpu="4", memory="8Gi", pods="110").info()
         for name in ("n1", "n2", "n3")]


def pod() -> PodInfo:
    return make_pod("p").req(cpu="100m").info()


def wait(timeout: float) -> Script:
    return Script(permit=Status(Code.WAIT), permit_timeout=timeout)


# --- construction ------------------------------------------------------------------------


@pytest.mark.parametrize(("plugins", "message"), [
    pytest.param({"score": ["OnlyFilter"]}, "does not implement score",
                 id="plugin at a point it does not implement"),
    pytest.param({"filter": ["NoSuchPlugin"]}, "unknown plugin", id="unknown plugin"),
    pytest.param({"queueSort": []}, "queueSort", id="no queueSort plugin"),
    pytest.param({"queueSort": ["PrioritySort", "PrioritySort"]}, "queueSort",
                 id="two queueSort plugins"),
    pytest.param({"bind": []}, "bind", id="no bind plugin (upstream: at least one is needed)"),
])
def test_invalid_profiles_raise(plugins: dict[str, list[str]], message: str) -> None:
    with pytest.raises(FrameworkError, match=message):
        build(plugins, ONLY_FILTER)


def test_plugins_are_built_once_and_ordered_per_point() -> None:
    framework = build({"preFilter": ["FilterB", "FilterA"], "filter": ["FilterA", "FilterB"]},
                      FILTER_A, FILTER_B)
    assert [p.NAME for p in framework.pre_filter_plugins] == ["FilterB", "FilterA"]
    assert [p.NAME for p in framework.filter_plugins] == ["FilterA", "FilterB"]
    assert id(framework.pre_filter_plugins[1]) == id(framework.filter_plugins[0])


def test_score_weights_default_to_one() -> None:
    framework = build({"score": ["ScoreA", "ScoreB"]}, SCORE_A, SCORE_B, weights={"ScoreB": 5})
    assert framework.weights == {"ScoreA": 1, "ScoreB": 5}


# --- queueing-hint registrations (upstream's buildQueueingHintMap) ----------------------------


def _skip(pod: PodInfo, old: object, new: object) -> QueueingHint:
    return QueueingHint.QUEUE_SKIP


NODE_ADD_HINTED = ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD), _skip)
NODE_TAINT = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT)


@pytest.mark.parametrize(("events", "expected"), [
    pytest.param((NODE_ADD_HINTED,), (NODE_ADD_HINTED, ClusterEventWithHint(NODE_TAINT)),
                 id="Node/Add without Node/UpdateNodeTaint also hears the latter, unhinted"),
    pytest.param((ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD
                                                    | ActionType.UPDATE_NODE_TAINT), _skip),),
                 (ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD
                                                    | ActionType.UPDATE_NODE_TAINT), _skip),),
                 id="Node/UpdateNodeTaint registered already: nothing added"),
    pytest.param((ASSIGNED_POD_DELETE,), (ClusterEventWithHint(ASSIGNED_POD_DELETE),),
                 id="a bare ClusterEvent (the form before hints) always answers Queue"),
    pytest.param((), (), id="no events: a rejection waits for the flush"),
])
def test_registrations_with_hints(events: tuple[Registration, ...],
                                  expected: tuple[ClusterEventWithHint, ...]) -> None:
    """As v1.36's buildQueueingHintMap (with its kubernetes#109437 stopgap)."""
    framework = build({"filter": ["OnlyFilter"]}, ONLY_FILTER,
                      scripts={"OnlyFilter": Script(events=events)},
                      handle=SharedHandle(features_value=Features(release=36)))
    assert framework.registrations["OnlyFilter"] == expected
    assert framework.hints_for("OnlyFilter") == expected


@pytest.mark.parametrize("events", [
    (NODE_ADD_HINTED,), (ASSIGNED_POD_DELETE,), (),
])
def test_v1_37_registers_only_what_the_plugin_asks_for(
        events: tuple[Registration, ...]) -> None:
    """v1.37's buildQueueingHintMap dropped the Node/UpdateNodeTaint stopgap."""
    framework = build({"filter": ["OnlyFilter"]}, ONLY_FILTER,
                      scripts={"OnlyFilter": Script(events=events)},
                      handle=SharedHandle(features_value=Features(release=37)))
    assert framework.registrations["OnlyFilter"] == with_hints(events)


def test_only_plugins_that_can_reject_register_events() -> None:
    framework = build({"score": ["ScoreA"], "reserve": ["ReserveA"]}, SCORE_A, RESERVE_A,
                      scripts={name: Script(events=(ASSIGNED_POD_DELETE,))
                               for name in ("ScoreA", "ReserveA")})
    assert set(framework.registrations) == {"ReserveA"}


def test_a_plugin_the_profile_does_not_know_wakes_on_anything() -> None:
    framework = build({"filter": ["OnlyFilter"]}, ONLY_FILTER)
    assert framework.hints_for("Gone") == (ClusterEventWithHint(EVERYTHING),)


# --- PreFilter / Filter ----------------------------------------------------------------------


def test_pre_filter_skip_skips_the_plugins_filter() -> None:
    script = Script(pre_filter=Status(Code.SKIP), reject={"n1": Status.unschedulable("no")})
    framework = build({"preFilter": ["FilterA"], "filter": ["FilterA"]}, FILTER_A,
                      scripts={"FilterA": script})
    state = CycleState()
    _, status, _ = framework.run_pre_filter(state, pod(), NODES)
    assert status.ok
    assert framework.run_filter(state, pod(), NODES[0]).ok
    assert script.log == ["FilterA.preFilter"]


def test_pre_filter_results_are_intersected() -> None:
    framework = build({"preFilter": ["FilterA", "FilterB"]}, FILTER_A, FILTER_B, scripts={
        "FilterA": Script(pre_filter_nodes={"n1", "n2"}),
        "FilterB": Script(pre_filter_nodes={"n2", "n3"})})
    result, status, _ = framework.run_pre_filter(CycleState(), pod(), NODES)
    assert status.ok
    assert result.node_names == {"n2"}


@pytest.mark.parametrize(("narrow_a", "narrow_b", "message", "plugins"), [
    pytest.param(set(), None, "node(s) didn't satisfy plugin FilterA", {"FilterA"},
                 id="one plugin narrows to nothing"),
    pytest.param({"n1"}, {"n2"},
                 "node(s) didn't satisfy plugin(s) [FilterA FilterB] simultaneously",
                 {"FilterA", "FilterB"}, id="two plugins with disjoint results"),
])
def test_empty_pre_filter_intersection(narrow_a: set[str], narrow_b: set[str] | None,
                                       message: str, plugins: set[str]) -> None:
    framework = build({"preFilter": ["FilterA", "FilterB"]}, FILTER_A, FILTER_B, scripts={
        "FilterA": Script(pre_filter_nodes=narrow_a),
        "FilterB": Script(pre_filter_nodes=narrow_b)})
    _, status, rejectors = framework.run_pre_filter(CycleState(), pod(), NODES)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == message
    assert rejectors == plugins


def test_pre_filter_unschedulable_keeps_running_later_plugins() -> None:
    # Upstream runs every PreFilter after an Unschedulable (preemption needs their state)
    # and returns at once on UnschedulableAndUnresolvable.
    first = Script(pre_filter=Status.unschedulable("too big"))
    second = Script(pre_filter=Status.unresolvable("never"))
    framework = build({"preFilter": ["FilterA", "FilterB"]}, FILTER_A, FILTER_B,
                      scripts={"FilterA": first, "FilterB": second})
    _, status, _ = framework.run_pre_filter(CycleState(), pod(), NODES)
    assert second.log == ["FilterB.preFilter"]
    assert (status.code, status.plugin, status.reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "FilterB", ["never"])


def test_pre_filter_unschedulable_is_returned_after_the_rest_ran() -> None:
    first = Script(pre_filter=Status.unschedulable("too big"))
    second = Script()
    framework = build({"preFilter": ["FilterA", "FilterB"]}, FILTER_A, FILTER_B,
                      scripts={"FilterA": first, "FilterB": second})
    _, status, _ = framework.run_pre_filter(CycleState(), pod(), NODES)
    assert second.log == ["FilterB.preFilter"]
    assert (status.code, status.plugin, status.reasons) == (
        Code.UNSCHEDULABLE, "FilterA", ["too big"])


def test_pre_filter_unresolvable_stops_at_once() -> None:
    first = Script(pre_filter=Status.unresolvable("never"))
    second = Script()
    framework = build({"preFilter": ["FilterA", "FilterB"]}, FILTER_A, FILTER_B,
                      scripts={"FilterA": first, "FilterB": second})
    _, status, _ = framework.run_pre_filter(CycleState(), pod(), NODES)
    assert second.log == []
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "FilterA")


def test_filter_stops_at_the_first_rejection() -> None:
    first = Script(reject={"n1": Status.unschedulable("first says no")})
    second = Script(reject={"n1": Status.unschedulable("second says no")})
    framework = build({"filter": ["FilterA", "FilterB"]}, FILTER_A, FILTER_B,
                      scripts={"FilterA": first, "FilterB": second})
    status = framework.run_filter(CycleState(), pod(), NODES[0])
    assert (status.code, status.plugin, status.reasons) == (
        Code.UNSCHEDULABLE, "FilterA", ["first says no"])
    assert second.log == []
    assert framework.run_filter(CycleState(), pod(), NODES[1]).ok
    assert second.log == ["FilterB.filter:n2"]


# --- PreScore / Score ------------------------------------------------------------------------


def test_pre_score_skip_skips_the_plugins_score() -> None:
    skipped = Script(pre_score=Status(Code.SKIP), scores={"n1": 1000})  # would be invalid
    framework = build({"preScore": ["ScoreA", "ScoreB"], "score": ["ScoreA", "ScoreB"]},
                      SCORE_A, SCORE_B, scripts={"ScoreA": skipped,
                                                 "ScoreB": Script(scores={"n1": 7})})
    state = CycleState()
    assert framework.run_pre_score(state, pod(), NODES).ok
    totals, status = framework.run_score(state, pod(), NODES)
    assert status.ok
    assert totals == [7, 0, 0]
    assert skipped.log == ["ScoreA.preScore"]


def test_scores_are_weighted_and_summed() -> None:
    framework = build({"score": ["ScoreA", "ScoreB"]}, SCORE_A, SCORE_B, weights={"ScoreB": 3},
                      scripts={"ScoreA": Script(scores={"n1": 10, "n2": 50}),
                               "ScoreB": Script(scores={"n1": 20, "n3": 100})})
    totals, status = framework.run_score(CycleState(), pod(), NODES)
    assert status.ok
    assert totals == [10 + 60, 50, 300]


def test_normalize_runs_before_weighting() -> None:
    def halve(scores: list[NodeScore]) -> Status:
        for entry in scores:
            entry.score //= 2
        return Status()

    framework = build({"score": ["Normalized"]}, NORMALIZED, weights={"Normalized": 2},
                      scripts={"Normalized": Script(scores={"n1": 200, "n2": 100},
                                                    normalize=halve)})
    totals, status = framework.run_score(CycleState(), pod(), NODES)
    assert status.ok
    assert totals == [200, 100, 0]


@pytest.mark.parametrize("score", [101, -1], ids=["above 100", "below 0"])
def test_score_out_of_range_after_normalize_is_an_error(score: int) -> None:
    framework = build({"score": ["Normalized"]}, NORMALIZED, scripts={
        "Normalized": Script(scores={"n1": 50}, normalize=lambda s: _set(s, score))})
    _, status = framework.run_score(CycleState(), pod(), NODES)
    assert status.code == Code.ERROR


def _set(scores: list[NodeScore], value: int) -> Status:
    scores[0].score = value
    return Status()


# --- Reserve / Permit ------------------------------------------------------------------------


def test_unreserve_runs_in_reverse_order() -> None:
    log: list[str] = []
    framework = build({"reserve": ["ReserveA", "ReserveB", "ReserveC"]},
                      RESERVE_A, RESERVE_B, RESERVE_C,
                      scripts={name: Script(log=log)
                               for name in ("ReserveA", "ReserveB", "ReserveC")})
    state = CycleState()
    assert framework.run_reserve(state, pod(), "n1").ok
    framework.run_unreserve(state, pod(), "n1")
    assert log == ["ReserveA.reserve", "ReserveB.reserve", "ReserveC.reserve",
                   "ReserveC.unreserve", "ReserveB.unreserve", "ReserveA.unreserve"]


def test_reserve_failure_stops_later_reserves() -> None:
    log: list[str] = []
    framework = build({"reserve": ["ReserveA", "ReserveB", "ReserveC"]},
                      RESERVE_A, RESERVE_B, RESERVE_C, scripts={
                          "ReserveA": Script(log=log),
                          "ReserveB": Script(log=log, reserve=Status.unschedulable("full")),
                          "ReserveC": Script(log=log)})
    status = framework.run_reserve(CycleState(), pod(), "n1")
    assert (status.code, status.plugin, status.reasons) == (
        Code.UNSCHEDULABLE, "ReserveB", ["full"])
    assert log == ["ReserveA.reserve", "ReserveB.reserve"]


def test_permit_success_needs_no_waiting() -> None:
    framework = build({"permit": ["PermitAlpha"]}, PERMIT_A)
    assert framework.run_permit(CycleState(), pod(), "n1").ok
    assert framework.waiting_pods == {}


def test_permit_rejection_is_returned_with_the_plugin() -> None:
    framework = build({"permit": ["PermitAlpha", "PermitBeta"]}, PERMIT_A, PERMIT_B, scripts={
        "PermitAlpha": Script(permit=Status.unschedulable("not now"))})
    status = framework.run_permit(CycleState(), pod(), "n1")
    assert (status.code, status.plugin, status.reasons) == (
        Code.UNSCHEDULABLE, "PermitAlpha", ["not now"])
    assert framework.waiting_pods == {}


async def test_permit_wait_then_allow() -> None:
    framework = build({"permit": ["PermitAlpha"]}, PERMIT_A,
                      scripts={"PermitAlpha": wait(5.0)})
    info = pod()
    assert framework.run_permit(CycleState(), info, "n1").code == Code.WAIT
    assert info.uid in framework.waiting_pods
    waiter = asyncio.ensure_future(framework.wait_on_permit(info))
    await asyncio.sleep(0)
    assert not waiter.done()
    framework.waiting_pods[info.uid].allow("PermitAlpha")
    status = await asyncio.wait_for(waiter, timeout=1.0)
    assert status.ok
    assert framework.waiting_pods == {}


async def test_permit_wait_then_reject() -> None:
    framework = build({"permit": ["PermitAlpha"]}, PERMIT_A,
                      scripts={"PermitAlpha": wait(5.0)})
    info = pod()
    framework.run_permit(CycleState(), info, "n1")
    waiter = asyncio.ensure_future(framework.wait_on_permit(info))
    await asyncio.sleep(0)
    framework.waiting_pods[info.uid].reject("Gang", "gang member failed")
    status = await asyncio.wait_for(waiter, timeout=1.0)
    assert (status.code, status.plugin, status.reasons) == (
        Code.UNSCHEDULABLE, "Gang", ["gang member failed"])
    assert framework.waiting_pods == {}


async def test_permit_wait_times_out_as_unschedulable() -> None:
    framework = build({"permit": ["PermitAlpha"]}, PERMIT_A,
                      scripts={"PermitAlpha": wait(0.02)})
    info = pod()
    framework.run_permit(CycleState(), info, "n1")
    status = await asyncio.wait_for(framework.wait_on_permit(info), timeout=1.0)
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE, "PermitAlpha")
    assert framework.waiting_pods == {}


async def test_permit_timeout_message_prints_the_duration_as_go_does() -> None:
    framework = build({"permit": ["PermitAlpha"]}, PERMIT_A,
                      scripts={"PermitAlpha": wait(0.02)})
    info = pod()
    framework.run_permit(CycleState(), info, "n1")
    status = await asyncio.wait_for(framework.wait_on_permit(info), timeout=1.0)
    assert status.reasons == ["rejected due to timeout after waiting 20ms at plugin PermitAlpha"]


async def test_every_waiting_plugin_must_allow() -> None:
    framework = build({"permit": ["PermitAlpha", "PermitBeta"]}, PERMIT_A, PERMIT_B,
                      scripts={"PermitAlpha": wait(5.0), "PermitBeta": wait(5.0)})
    info = pod()
    framework.run_permit(CycleState(), info, "n1")
    waiter = asyncio.ensure_future(framework.wait_on_permit(info))
    framework.waiting_pods[info.uid].allow("PermitAlpha")
    await asyncio.sleep(0.01)
    assert not waiter.done()
    framework.waiting_pods[info.uid].allow("PermitBeta")
    assert (await asyncio.wait_for(waiter, timeout=1.0)).ok


async def test_timeout_is_charged_to_the_plugin_whose_wait_ran_out() -> None:
    # Each waiting plugin has its own timer: the short one (PermitBeta) fires first.
    framework = build({"permit": ["PermitAlpha", "PermitBeta"]}, PERMIT_A, PERMIT_B,
                      scripts={"PermitAlpha": wait(5.0), "PermitBeta": wait(0.02)})
    info = pod()
    framework.run_permit(CycleState(), info, "n1")
    status = await asyncio.wait_for(framework.wait_on_permit(info), timeout=1.0)
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE, "PermitBeta")


async def test_allowing_the_short_waiter_does_not_cut_the_longer_wait() -> None:
    framework = build({"permit": ["PermitAlpha", "PermitBeta"]}, PERMIT_A, PERMIT_B,
                      scripts={"PermitAlpha": wait(5.0), "PermitBeta": wait(0.02)})
    info = pod()
    framework.run_permit(CycleState(), info, "n1")
    waiter = asyncio.ensure_future(framework.wait_on_permit(info))
    framework.waiting_pods[info.uid].allow("PermitBeta")
    await asyncio.sleep(0.1)  # well past PermitBeta's 20ms
    assert not waiter.done()
    framework.waiting_pods[info.uid].allow("PermitAlpha")
    assert (await asyncio.wait_for(waiter, timeout=1.0)).ok


async def test_wait_on_permit_without_a_waiting_pod_succeeds() -> None:
    framework = build({}, PERMIT_A)
    assert (await framework.wait_on_permit(pod())).ok


# --- Bind ------------------------------------------------------------------------------------


async def test_bind_skip_passes_to_the_next_bind_plugin() -> None:
    log: list[str] = []
    framework = build({"bind": ["BindA", "BindB"]}, BIND_A, BIND_B, scripts={
        "BindA": Script(log=log, bind=Status(Code.SKIP)), "BindB": Script(log=log)})
    assert (await framework.run_bind(CycleState(), pod(), "n1")).ok
    assert log == ["BindA.bind", "BindB.bind"]


async def test_every_bind_plugin_skipping_is_skip() -> None:
    framework = build({"bind": ["BindA"]}, BIND_A,
                      scripts={"BindA": Script(bind=Status(Code.SKIP))})
    assert (await framework.run_bind(CycleState(), pod(), "n1")).code == Code.SKIP


async def test_default_binder_binds_through_the_handle() -> None:
    framework = build({})
    assert (await framework.run_bind(CycleState(), pod(), "n1")).ok
    assert framework.shared.bound == [("default/p", "n1")]  # type: ignore[attr-defined]


# --- error messages, as upstream wraps plugin errors -----------------------------------------


def test_pre_filter_error_message() -> None:
    framework = build({"preFilter": ["FilterA"]}, FILTER_A,
                      scripts={"FilterA": Script(pre_filter=Status.error("boom"))})
    _, status, _ = framework.run_pre_filter(CycleState(), pod(), NODES)
    assert (status.code, status.plugin) == (Code.ERROR, "FilterA")
    assert status.message() == 'running PreFilter plugin "FilterA": boom'


def test_filter_error_message() -> None:
    framework = build({"filter": ["FilterA"]}, FILTER_A,
                      scripts={"FilterA": Script(reject={"n1": Status.error("boom")})})
    status = framework.run_filter(CycleState(), pod(), NODES[0])
    assert (status.code, status.plugin) == (Code.ERROR, "FilterA")
    assert status.message() == 'running "FilterA" filter plugin: boom'


@pytest.mark.parametrize("returned", [Status.error("boom"), Status.unschedulable("boom")],
                         ids=["error", "unschedulable"])
def test_pre_score_failure_is_an_error(returned: Status) -> None:
    framework = build({"preScore": ["ScoreA"], "score": ["ScoreA"]}, SCORE_A,
                      scripts={"ScoreA": Script(pre_score=returned)})
    status = framework.run_pre_score(CycleState(), pod(), NODES)
    assert status.code == Code.ERROR
    assert status.message() == 'running PreScore plugin "ScoreA": boom'


def test_score_error_message() -> None:
    framework = build({"score": ["ScoreA"]}, SCORE_A,
                      scripts={"ScoreA": Script(score_status=Status.error("boom"))})
    _, status = framework.run_score(CycleState(), pod(), NODES)
    assert status.code == Code.ERROR
    assert status.message() == 'running Score plugins: plugin "ScoreA" failed with: boom'


def test_normalize_error_message() -> None:
    framework = build({"score": ["Normalized"]}, NORMALIZED, scripts={
        "Normalized": Script(normalize=lambda scores: Status.error("boom"))})
    _, status = framework.run_score(CycleState(), pod(), NODES)
    assert status.code == Code.ERROR
    assert status.message() == (
        'running Normalize on Score plugins: plugin "Normalized" failed with: boom')


def test_invalid_score_message() -> None:
    framework = build({"score": ["Normalized"]}, NORMALIZED, scripts={
        "Normalized": Script(normalize=lambda s: _set(s, 101))})
    _, status = framework.run_score(CycleState(), pod(), NODES)
    assert status.message() == (
        'applying score defaultWeights on Score plugins: plugin "Normalized" returns an '
        "invalid score 101, it should in the range of [0, 100] after normalizing")


def test_reserve_error_message() -> None:
    framework = build({"reserve": ["ReserveA"]}, RESERVE_A,
                      scripts={"ReserveA": Script(reserve=Status.error("boom"))})
    status = framework.run_reserve(CycleState(), pod(), "n1")
    assert status.code == Code.ERROR
    assert status.message() == 'running Reserve plugin "ReserveA": boom'


def test_permit_error_message() -> None:
    framework = build({"permit": ["PermitAlpha"]}, PERMIT_A,
                      scripts={"PermitAlpha": Script(permit=Status.error("boom"))})
    status = framework.run_permit(CycleState(), pod(), "n1")
    assert (status.code, status.plugin) == (Code.ERROR, "PermitAlpha")
    assert status.message() == 'running Permit plugin "PermitAlpha": boom'


def test_framework_type() -> None:
    assert isinstance(build({}), Framework)


# --- nominated pods (upstream's RunFilterPluginsWithNominatedPods) ---------------------------


@pytest.mark.parametrize(("own_priority", "nominated_priority", "fits"), [
    pytest.param(5, 10, False, id="higher-priority nominated pod takes the room"),
    pytest.param(10, 10, False, id="equal-priority nominated pod takes the room"),
    pytest.param(20, 10, True, id="lower-priority nominated pod is ignored"),
])
def test_filter_counts_nominated_pods_of_equal_or_higher_priority(
        own_priority: int, nominated_priority: int, fits: bool) -> None:
    handle = SharedHandle()
    handle.nominated["n1"] = [make_pod("nominated").uid("nominated")
                              .priority(nominated_priority).req(cpu="1500m").info()]
    framework = build({"preFilter": ["NodeResourcesFit"], "filter": ["NodeResourcesFit"]},
                      handle=handle)
    node = make_node("n1").capacity(cpu="2", memory="8Gi", pods="110").info()
    info = make_pod("p").priority(own_priority).req(cpu="1").info()
    state = CycleState()
    assert framework.run_pre_filter(state, info, [node])[1].ok
    status = framework.run_filter_with_nominated(state, info, node)
    assert status.ok is fits
    if not fits:
        assert (status.plugin, status.reasons) == ("NodeResourcesFit", ["Insufficient cpu"])
    assert framework.run_filter(state, info, node).ok  # the node itself has room


def test_a_pod_is_not_blocked_by_its_own_nomination() -> None:
    handle = SharedHandle()
    info = make_pod("p").priority(10).req(cpu="1500m").info()
    handle.nominated["n1"] = [info]
    framework = build({"preFilter": ["NodeResourcesFit"], "filter": ["NodeResourcesFit"]},
                      handle=handle)
    node = make_node("n1").capacity(cpu="2", memory="8Gi", pods="110").info()
    state = CycleState()
    framework.run_pre_filter(state, info, [node])
    assert framework.run_filter_with_nominated(state, info, node).ok
