"""The non-zero request list that skips a second sum over the containers when the
defaults change nothing (resource_vectors._non_zero_list, pod_requests_and_non_zero),
against the form it replaced: the containers always summed again with the defaults."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.resource_vectors import (
    _ALL_DEFAULTS,
    Resource,
    _pod_level_requests_set,
    _request_list,
    pod_requests,
    pod_requests_and_non_zero,
)

NAMES = ("cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "example.com/gpu")
AMOUNTS = ("0", "1", "250m", "3", "100Mi", "1Gi", "1.5")


def non_zero_as_before(spec: api.PodSpec) -> Resource:
    """pod_requests(spec, non_zero=True) as written before the shortcut."""
    requests = _request_list(spec, {})
    if _pod_level_requests_set(spec):
        defaults = {name: amount for name, amount in _ALL_DEFAULTS.items()
                    if name not in requests}
    else:
        defaults = _ALL_DEFAULTS
    if defaults:
        requests = _request_list(spec, defaults)
    return Resource.from_mapping(requests)


requests = st.dictionaries(st.sampled_from(NAMES), st.sampled_from(AMOUNTS), max_size=4)
containers = st.lists(st.builds(
    api.Container, name=st.just("c"),
    resources=st.builds(api.ResourceRequirements, requests=requests),
    restart_policy=st.sampled_from((None, "Always"))), max_size=3)
# Most generated pods request cpu and memory in every container (the shortcut's case);
# the rest leave some out.
full = st.fixed_dictionaries({"cpu": st.sampled_from(AMOUNTS),
                              "memory": st.sampled_from(AMOUNTS)})
full_containers = st.lists(st.builds(
    api.Container, name=st.just("c"),
    resources=st.builds(api.ResourceRequirements,
                        requests=st.builds(lambda a, b: {**a, **b}, full, requests)),
    restart_policy=st.sampled_from((None, "Always"))), max_size=3)
specs = st.builds(
    api.PodSpec,
    containers=st.one_of(containers, full_containers),
    init_containers=st.one_of(containers, full_containers),
    overhead=st.dictionaries(st.sampled_from(NAMES), st.sampled_from(AMOUNTS), max_size=2),
    resources=st.one_of(st.none(), st.builds(api.ResourceRequirements, requests=requests)))


@settings(max_examples=400, deadline=None)
@given(specs)
def test_non_zero_requests_as_before(spec: api.PodSpec) -> None:
    plain, non_zero = pod_requests_and_non_zero(spec)
    assert plain == Resource.from_mapping(_request_list(spec, {}))
    assert non_zero == non_zero_as_before(spec)
    assert pod_requests(spec, non_zero=True) == non_zero_as_before(spec)
    assert pod_requests(spec) == plain


def test_the_two_are_separate_objects() -> None:
    """A PodInfo's requests and non-zero requests may be the same amounts; changing
    one must not change the other."""
    container = api.Container(name="c", resources=api.ResourceRequirements(
        requests={"cpu": "1", "memory": "1Gi", "example.com/gpu": "1"}))
    info = PodInfo.of(api.Pod(spec=api.PodSpec(containers=[container])))
    assert info.requests == info.non_zero_requests
    info.non_zero_requests.add(Resource(milli_cpu=1, scalar={"example.com/gpu": 1}))
    assert info.requests == Resource(milli_cpu=1000, memory=1 << 30,
                                     scalar={"example.com/gpu": 1})


def test_a_container_without_memory_still_counts_the_default() -> None:
    container = api.Container(name="c", resources=api.ResourceRequirements(
        requests={"cpu": "1"}))
    plain, non_zero = pod_requests_and_non_zero(api.PodSpec(containers=[container]))
    assert (plain.milli_cpu, plain.memory) == (1000, 0)
    assert (non_zero.milli_cpu, non_zero.memory) == (1000, 200 * 1024 * 1024)
