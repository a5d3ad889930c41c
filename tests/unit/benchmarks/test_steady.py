"""Steady state (benchmarks/steady.py): which pods a window creates and replaces, what
it measures, and the DRA workloads' upstream sizes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import steady, workloads
from benchmarks.runner import RunSpec, _writes_by_kind
from benchmarks.stats import throughput_samples


def test_the_seed_is_the_kept_pods_numbered_from_zero() -> None:
    keeper = steady.Keeper("test-dra", kept=3, max_pods=100)
    assert keeper.seed() == ["test-dra-0", "test-dra-1", "test-dra-2"]
    assert keeper.created == 3
    with pytest.raises(RuntimeError):
        keeper.seed()


def test_a_bound_pod_is_replaced_once_by_the_next_number() -> None:
    keeper = steady.Keeper("test-dra", kept=2, max_pods=100)
    keeper.seed()
    assert keeper.on_bound("test-dra-1") == "test-dra-2"
    # The watch may report it again (its delete carries the node name too).
    assert keeper.on_bound("test-dra-1") is None
    assert keeper.on_bound("test-dra-0") == "test-dra-3"
    assert keeper.on_bound("test-dra-2") == "test-dra-4"
    assert keeper.created == 5
    assert keeper.replaced == {"test-dra-0", "test-dra-1", "test-dra-2"}


@pytest.mark.parametrize("name", [
    "test-dra-7",  # not created yet
    "other-0",  # another prefix
    "test-dra-x",  # no number
    "test-dra",  # no number at all
    "init-0",  # an initial pod
])
def test_pods_not_of_the_window_are_left_alone(name: str) -> None:
    keeper = steady.Keeper("test-dra", kept=2, max_pods=100)
    keeper.seed()
    assert keeper.on_bound(name) is None
    assert keeper.created == 2
    assert not keeper.replaced


def test_nothing_is_replaced_once_the_window_is_closed() -> None:
    keeper = steady.Keeper("test-dra", kept=2, max_pods=100)
    keeper.seed()
    keeper.close()
    assert keeper.on_bound("test-dra-0") is None
    assert keeper.created == 2
    assert not keeper.exhausted


def test_the_pod_limit_stops_the_replacements_and_says_so() -> None:
    keeper = steady.Keeper("test-dra", kept=2, max_pods=3)
    keeper.seed()
    assert keeper.on_bound("test-dra-0") == "test-dra-2"
    assert not keeper.exhausted
    assert keeper.on_bound("test-dra-1") is None
    assert keeper.exhausted
    assert keeper.created == 3
    # Exhaustion does not mark the pod replaced: it stays bound, not deleted.
    assert "test-dra-1" not in keeper.replaced


def test_a_seed_larger_than_the_limit_is_cut_to_it() -> None:
    keeper = steady.Keeper("p", kept=5, max_pods=2)
    assert keeper.seed() == ["p-0", "p-1"]


@given(kept=st.integers(1, 12), picks=st.lists(st.integers(0, 10_000), max_size=80))
def test_the_pending_pods_stay_as_many_as_kept(kept: int, picks: list[int]) -> None:
    """Whichever pending pods bind, in whatever order, each is replaced by one new
    pod: as many stay pending as were kept, until the pod limit."""
    keeper = steady.Keeper("p", kept=kept, max_pods=kept + 40)
    pending = set(keeper.seed())
    for pick in picks:
        name = sorted(pending)[pick % len(pending)]
        replacement = keeper.on_bound(name)
        if replacement is None:
            assert keeper.exhausted
            assert keeper.created == keeper.max_pods
            break
        assert replacement not in pending
        pending.remove(name)
        pending.add(replacement)
        assert len(pending) == kept
        assert keeper.created == kept + len(keeper.replaced)


def test_the_pod_limit_follows_the_duration() -> None:
    assert steady.max_pods(10, 10.0) == 10 + 10 * steady.MAX_PODS_PER_SECOND
    assert steady.max_pods(1, 0.25) == 1 + math.ceil(0.25 * steady.MAX_PODS_PER_SECOND)
    for kept, seconds in ((0, 10.0), (10, 0.0), (10, -1.0), (10, math.nan)):
        with pytest.raises(ValueError):
            steady.max_pods(kept, seconds)


def _window() -> steady.Window:
    return steady.Window(started=100.0, ended=110.0, created=4, replaced=2,
                         exhausted=False, acked={"p-0": 100.1, "p-1": 100.2, "p-3": 105.0})


def test_only_binds_within_the_window_are_measured() -> None:
    bound = {"p-0": 100.5, "p-1": 110.0, "p-2": 110.01, "old": 99.9}
    assert steady.binds_in_window(bound, _window()) == {"p-0": 100.5, "p-1": 110.0}


def test_create_replies_are_in_pod_order_with_gaps_as_nan() -> None:
    acked = steady.acked_in_order(_window(), "p")
    assert acked[:2] == [100.1, 100.2]
    assert math.isnan(acked[2])
    assert acked[3] == 105.0
    assert len(acked) == 4


def test_a_window_samples_its_rate_and_not_its_tail() -> None:
    """Ten binds a second over a 10 s window, then a burst after it: the samples see
    the window's ten per second only (the first tick starts the clock)."""
    window = steady.Window(started=0.0, ended=10.0, created=0, replaced=0,
                           exhausted=False)
    bound = {f"p-{i}": 0.05 + i * 0.1 for i in range(100)}
    bound.update({f"late-{i}": 10.5 for i in range(50)})
    samples = throughput_samples(window.started,
                                 list(steady.binds_in_window(bound, window).values()))
    assert len(samples) == 8
    assert samples == pytest.approx([10.0] * 8)


def test_dra_steady_state_has_upstreams_shape_at_any_size() -> None:
    """Upstream's empty_500nodes: 10 devices per node, none taken, 10 pods kept for
    10 s; the same at 1000 nodes (upstream has no such size)."""
    workload = workloads.WORKLOADS["dra-steady-state"]
    assert workload.upstream == "SteadyStateClusterResourceClaimTemplate"
    assert workload.dra is not None and workload.dra.devices_per_node == 10
    assert workload.measured_pod.claim_template == workloads.DRA_CLAIM_TEMPLATE
    assert workload.steady_seconds == 10.0
    for nodes in (500, 1000):
        assert workloads.sizes_for(workload, nodes, None, None) == workloads.Sizes(
            nodes, 0, 10)


def test_dra_steady_state_takes_upstreams_half_and_full_cases() -> None:
    workload = workloads.WORKLOADS["dra-steady-state"]
    assert workloads.sizes_for(workload, 500, 2500, None).init_pods == 2500  # half_
    assert workloads.sizes_for(workload, 500, 4990, None).init_pods == 4990  # full_
    with pytest.raises(ValueError, match="at most 9"):
        workloads.sizes_for(workload, 500, 4991, None)


@pytest.mark.parametrize(("nodes", "init", "measured"), [
    (200, 1000, 1000),  # 2000pods_200nodes
    (500, 2500, 2500),  # 5000pods_500nodes
])
def test_dra_claim_templates_defaults_are_upstreams(nodes: int, init: int,
                                                    measured: int) -> None:
    workload = workloads.WORKLOADS["dra-claim-templates"]
    assert workload.steady_seconds is None
    assert workloads.sizes_for(workload, nodes, None, None) == workloads.Sizes(
        nodes, init, measured)


def test_the_window_length_is_the_workloads_unless_given() -> None:
    steady_workload = workloads.WORKLOADS["dra-steady-state"]
    sizes = workloads.sizes_for(steady_workload, 10, None, None)
    assert RunSpec(steady_workload, sizes).steady_seconds() == 10.0
    assert RunSpec(steady_workload, sizes, duration=30.0).steady_seconds() == 30.0
    burst = workloads.WORKLOADS["dra-claim-templates"]
    assert RunSpec(burst, workloads.sizes_for(burst, 10, None, None),
                   duration=30.0).steady_seconds() is None


def test_a_steady_windows_pod_deletes_are_the_benchmarks_not_the_schedulers() -> None:
    def requests(deletes: float, binds: float) -> dict[str, list[tuple[dict[str, str], float]]]:
        return {"apiserver_request_total": [
            ({"verb": "DELETE", "resource": "pods", "code": "200"}, deletes),
            ({"verb": "POST", "resource": "pods", "subresource": "binding",
              "code": "201"}, binds),
            ({"verb": "POST", "resource": "pods", "code": "201"}, 99.0)]}

    before, after = requests(1.0, 2.0), requests(41.0, 43.0)
    assert _writes_by_kind(before, after) == {"DELETE pods": 40.0, "POST pods/binding": 41.0}
    assert _writes_by_kind(before, after, steady_state=True) == {"POST pods/binding": 41.0}
