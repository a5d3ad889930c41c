"""DynamicResources' PodGroupPostFilter as v1.37.2: for a pod group that did not fit,
each member tried in the cycle frees what its own PostFilter would (a claim allocated
where the member cannot go, reserved for nobody, is deallocated), and the answer is
Unschedulable "deallocation and deletion of ResourceClaims completed" whatever it did;
a failed write is the group's Error."""

from __future__ import annotations

from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.plugins.dynamic_resources.plugin import POD_GROUP_CLAIMS_CLEANED_UP
from tests.unit.api_double import RecordingApi
from tests.unit.plugins.dynamic_resources.test_plugin import World, _claim, _class, _pod, _uses

ON_N2 = {"nodeSelectorTerms": [{"matchFields": [
    {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}


def _allocated_on_n2(name: str) -> object:
    return _claim(name, allocation={"nodeSelector": ON_N2, "devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "n2", "device": "gpu-0"}]}})


def test_each_tried_member_frees_its_claim_and_the_group_hears_one_answer() -> None:
    recording = RecordingApi()
    world = World(_allocated_on_n2("a"), _allocated_on_n2("b"), _class(),
                  api_client=recording, release=37)
    first, second, untried = (_pod([_uses("a")], "m0"), _pod([_uses("b")], "m1"),
                              _pod([_uses("b")], "m2"))
    first_state, _ = world.cycle(first, "n1")
    second_state, _ = world.cycle(second, "n1")
    status = world.plugin.pod_group_post_filter(
        [(first, first_state), (second, second_state), (untried, CycleState())])
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, POD_GROUP_CLAIMS_CLEANED_UP)
    # Both tried members' claims were written back empty; the untried one did nothing.
    assert len(recording.sent("PUT", "/resourceclaims/a/status")) == 1
    assert len(recording.sent("PUT", "/resourceclaims/b/status")) == 1


def test_a_claim_another_pod_uses_is_kept_and_the_group_still_hears_its_words() -> None:
    recording = RecordingApi()
    used = _claim("c", allocation={"nodeSelector": ON_N2, "devices": {"results": []}},
                  reservedFor=[{"resource": "pods", "name": "other", "uid": "uid-other"}])
    world = World(used, _class(), api_client=recording, release=37)
    member = _pod([_uses("c")], "m0")
    state, _ = world.cycle(member, "n1")
    status = world.plugin.pod_group_post_filter([(member, state)])
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, POD_GROUP_CLAIMS_CLEANED_UP)
    assert recording.sent("PUT", "/resourceclaims/c/status") == []
