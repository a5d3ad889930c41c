"""DynamicResources: upstream's answers for pods without claims; claims are refused."""

from __future__ import annotations

import msgspec

from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins.dynamic_resources import plugin as dynamic_resources


def _pod(claims: list[dict[str, str]]) -> PodInfo:
    return PodInfo.of(msgspec.convert(
        {"metadata": {"name": "p", "namespace": "d", "uid": "u"},
         "spec": {"containers": [{"name": "c"}], "resourceClaims": claims}}, api.Pod))


def test_pod_without_claims_skips_prefilter_and_says_no_claims_at_postfilter() -> None:
    plugin = dynamic_resources.DynamicResources()
    pod = _pod([])
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, [])
    assert status.code == Code.SKIP
    result, post = plugin.post_filter(state, pod, {})
    assert result is None
    assert (post.code, post.reasons) == (Code.UNSCHEDULABLE, ["no new claims to deallocate"])


def test_postfilter_without_its_prefilter_is_the_state_lookup_error() -> None:
    """An earlier PreFilter plugin rejected the pod (e.g. VolumeBinding's unbound
    immediate claims): upstream's PostFilter cannot read its state and errors."""
    result, post = dynamic_resources.DynamicResources().post_filter(CycleState(), _pod([]), {})
    assert result is None
    assert (post.code, post.message()) == (Code.ERROR, "not found")


def test_pod_with_claims_is_refused_with_a_reason() -> None:
    _, status = dynamic_resources.DynamicResources().pre_filter(
        CycleState(), _pod([{"name": "gpu"}]), [])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert "does not support dynamic resource allocation" in status.message()
