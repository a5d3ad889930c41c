"""Claims of a pod's PodGroup (DRAWorkloadResourceClaims): upstream's resourceclaim
IsForPod, IsReservedForPod, BindTo and NameFromPodGroup, as the tables of
k8s.io/dynamic-resource-allocation v0.37.2's resourceclaim_test.go have them (their
texts end up in pods' events)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kpysched.objects import api
from kpysched.objects import dra as resource
from kpysched.objects.scheduling import PodGroup, PodGroupResourceClaim
from kpysched.plugins.dynamic_resources.claims import (
    ClaimUnavailableError,
    check_owner,
    is_reserved_for_pod,
)
from kpysched.plugins.dynamic_resources.group_claims import (
    bind_to,
    claim_name_in_group,
    is_for_pod_group,
)

NS = "kube-system"


def _pod(name: str, uid: str, group: str | None = None, namespace: str = NS,
         claims: tuple[dict[str, Any], ...] = ()) -> api.Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c"}], "resourceClaims": list(claims)}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return msgspec.convert({"metadata": {"name": name, "namespace": namespace, "uid": uid},
                            "spec": spec}, api.Pod)


def _claim(name: str, namespace: str = NS, owner: dict[str, Any] | None = None,
           reserved: tuple[dict[str, str], ...] = ()) -> resource.ResourceClaim:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if owner is not None:
        meta["ownerReferences"] = [{**owner, "controller": True}]
    return msgspec.convert({"metadata": meta, "status": {"reservedFor": list(reserved)}},
                           resource.ResourceClaim)


def _group(name: str, uid: str, namespace: str = NS, claims: tuple[dict[str, Any], ...] = (),
           statuses: tuple[dict[str, Any], ...] = ()) -> PodGroup:
    return msgspec.convert({"metadata": {"name": name, "namespace": namespace, "uid": uid},
                            "spec": {"resourceClaims": list(claims)},
                            "status": {"resourceClaimStatuses": list(statuses)}}, PodGroup)


POD_OWNER = {"uid": "uid-podOwner"}
GROUP_OWNER = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
               "name": "podGroupOwner", "uid": "uid-podGroupOwner"}
OTHER_VERSION_GROUP_OWNER = {**GROUP_OWNER, "apiVersion": "scheduling.k8s.io/v25"}


@pytest.mark.parametrize(("pod", "claim", "accept_group", "error"), [
    pytest.param(_pod("podOwner", "uid-podOwner"), _claim("claimWithOwner", owner=POD_OWNER),
                 False, None, id="owned"),
    pytest.param(_pod("podNotOwner", "uid-podNotOwner"),
                 _claim("claimWithOwner", owner=POD_OWNER), False,
                 "ResourceClaim kube-system/claimWithOwner was not created for Pod "
                 "kube-system/podNotOwner (Pod is not owner)", id="other-pod"),
    pytest.param(_pod("podOwner", "uid-podOwner"), _claim("claimNoOwner"), False,
                 "ResourceClaim kube-system/claimNoOwner was not created for Pod "
                 "kube-system/podOwner (Pod is not owner)", id="no-owner"),
    pytest.param(_pod("podOwner", "uid-podOwner"), _claim("claimNoOwner"), True,
                 "ResourceClaim kube-system/claimNoOwner was not created for Pod "
                 "kube-system/podOwner (Pod is not owner)",
                 id="accept-podgroup-without-podgroup"),
    pytest.param(_pod("podOwner", "uid-podOwner"),
                 _claim("userClaimWithOwner", "user-namespace", POD_OWNER), False,
                 "ResourceClaim user-namespace/userClaimWithOwner is not in the same "
                 "namespace as Pod kube-system/podOwner", id="different-namespace"),
    pytest.param(_pod("podOwner", "uid-podOwner", "podGroupOwner"),
                 _claim("claimWithPodGroupOwner", owner=GROUP_OWNER), True, None,
                 id="owned-by-podgroup"),
    pytest.param(_pod("podOwner", "uid-podOwner", "podGroupOwner"),
                 _claim("claimWithPodGroupOwner", owner=OTHER_VERSION_GROUP_OWNER), True,
                 None, id="owned-by-podgroup-other-api-version"),
    pytest.param(_pod("podOwner", "uid-podOwner", "podGroupNotOwner"),
                 _claim("claimWithPodGroupOwner", owner=GROUP_OWNER), True,
                 "ResourceClaim kube-system/claimWithPodGroupOwner was not created for Pod "
                 "kube-system/podOwner (neither Pod nor PodGroup podGroupNotOwner is the "
                 "owner)", id="other-podgroup"),
    pytest.param(_pod("podOwner", "uid-podOwner", "podGroupOwner"), _claim("claimNoOwner"),
                 True, "ResourceClaim kube-system/claimNoOwner was not created for Pod "
                 "kube-system/podOwner (neither Pod nor PodGroup podGroupOwner is the owner)",
                 id="no-podgroup-owner"),
    pytest.param(_pod("podOwner", "uid-podOwner", "podGroupOwner"),
                 _claim("userClaimWithPodGroupOwner", "user-namespace",
                        {"uid": "uid-podGroupOwner"}), True,
                 "ResourceClaim user-namespace/userClaimWithPodGroupOwner is not in the same "
                 "namespace as Pod kube-system/podOwner", id="different-podgroup-namespace"),
    # Without the gate a PodGroup owner is no owner, as upstream's IsForPod(.., false).
    pytest.param(_pod("podOwner", "uid-podOwner", "podGroupOwner"),
                 _claim("claimWithPodGroupOwner", owner=GROUP_OWNER), False,
                 "ResourceClaim kube-system/claimWithPodGroupOwner was not created for Pod "
                 "kube-system/podOwner (Pod is not owner)", id="podgroup-owner-gate-off"),
])
def test_is_for_pod(pod: api.Pod, claim: resource.ResourceClaim, accept_group: bool,
                    error: str | None) -> None:
    if error is None:
        check_owner(pod, claim, accept_group)
    else:
        with pytest.raises(ClaimUnavailableError) as raised:
            check_owner(pod, claim, accept_group)
        assert str(raised.value) == error


def _group_is_for_claims() -> list[Any]:
    owner = _group("podGroupOwner", "uid-podGroupOwner")
    return [
        pytest.param(owner, _claim("c", owner={"uid": "uid-podGroupOwner"}), True,
                     id="owned"),
        pytest.param(_group("podGroupNotOwner", "uid-podGroupNotOwner"),
                     _claim("c", owner={"uid": "uid-podGroupOwner"}), False, id="other"),
        pytest.param(owner, _claim("c"), False, id="no-owner"),
        pytest.param(owner, _claim("c", "user-namespace", {"uid": "uid-podGroupOwner"}),
                     False, id="different-namespace"),
    ]


@pytest.mark.parametrize(("group", "claim", "owned"), _group_is_for_claims())
def test_is_for_pod_group(group: PodGroup, claim: resource.ResourceClaim, owned: bool) -> None:
    assert is_for_pod_group(group, claim) is owned


POD_RESERVATION = {"resource": "pods", "name": "podReserved", "uid": "uid-podReserved"}
GROUP_RESERVATION = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                     "name": "podGroupReserved", "uid": "uid-podGroupReserved"}
OTHER_POD = {"resource": "pods", "name": "other", "uid": "uid-other"}
OTHER_GROUP = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
               "name": "otherGroup", "uid": "uid-otherGroup"}
RESERVED = _pod("podReserved", "uid-podReserved")
NOT_RESERVED = _pod("podNotReserved", "uid-podNotReserved")


def _in_group(pod: api.Pod, group: str) -> api.Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(
        pod.spec, scheduling_group=api.PodSchedulingGroup(pod_group_name=group)))


@pytest.mark.parametrize(("pod", "reserved", "accept_group", "expected"), [
    pytest.param(NOT_RESERVED, (), False, False, id="not-reserved"),
    pytest.param(RESERVED, (POD_RESERVATION,), False, True, id="reserved-for-pod"),
    pytest.param(NOT_RESERVED, (POD_RESERVATION,), False, False, id="reserved-for-other-pod"),
    pytest.param(RESERVED, (OTHER_POD, POD_RESERVATION), False, True,
                 id="multiple-reservations-including-pod"),
    pytest.param(NOT_RESERVED, (OTHER_POD, POD_RESERVATION), False, False,
                 id="multiple-reservations-excluding-pod"),
    pytest.param(_in_group(NOT_RESERVED, "podGroupReserved"), (GROUP_RESERVATION,), True,
                 True, id="reserved-for-podgroup"),
    pytest.param(_in_group(NOT_RESERVED, "podGroupReserved"), (GROUP_RESERVATION,), False,
                 False, id="podgroup-disabled"),
    pytest.param(_in_group(RESERVED, "podGroupReserved"),
                 (POD_RESERVATION, GROUP_RESERVATION), True, True,
                 id="reserved-for-pod-and-podgroup"),
    pytest.param(_in_group(NOT_RESERVED, "podGroupNotReserved"), (POD_RESERVATION,), True,
                 False, id="reserved-for-other-podgroup"),
    pytest.param(_in_group(NOT_RESERVED, "podGroupReserved"),
                 (OTHER_GROUP, GROUP_RESERVATION), True, True,
                 id="multiple-reservations-including-podgroup"),
    pytest.param(_in_group(NOT_RESERVED, "podGroupNotReserved"),
                 (OTHER_GROUP, GROUP_RESERVATION), True, False,
                 id="multiple-reservations-excluding-podgroup"),
])
def test_is_reserved_for_pod(pod: api.Pod, reserved: tuple[dict[str, str], ...],
                             accept_group: bool, expected: bool) -> None:
    assert is_reserved_for_pod(pod, _claim("c", reserved=reserved), accept_group) is expected


# --- BindTo ---------------------------------------------------------------------------

BY_NAME = {"name": "my-claim", "resourceClaimName": "my-resource-claim"}
BY_TEMPLATE = {"name": "my-claim", "resourceClaimTemplateName": "my-template"}
POD_REF = resource.ResourceClaimConsumerReference(resource="pods", name="my-pod",
                                                  uid="uid-my-pod")
GROUP_REF = resource.ResourceClaimConsumerReference(
    api_group="scheduling.k8s.io", resource="podgroups", name="my-podgroup",
    uid="uid-my-podgroup")


def _member(entry: dict[str, Any]) -> api.Pod:
    return _pod("my-pod", "uid-my-pod", "my-podgroup", "my-namespace", (entry,))


def _my_group(*claims: dict[str, Any], name: str = "my-podgroup",
              namespace: str = "my-namespace") -> PodGroup:
    return _group(name, "uid-my-podgroup", namespace, claims)


@pytest.mark.parametrize(("pod", "group", "expected"), [
    pytest.param(_member({"name": "my-claim"}), None,
                 "Pod my-namespace/my-pod claim my-claim: none of the supported fields are "
                 "set", id="unsupported-api-in-pod"),
    pytest.param(_member(BY_NAME), None, POD_REF, id="pod-claim-with-resource-claim-name"),
    pytest.param(_member(BY_TEMPLATE), None, POD_REF,
                 id="pod-claim-with-resource-claim-template-name"),
    pytest.param(_member(BY_NAME), _my_group(BY_NAME), GROUP_REF,
                 id="resource-claim-name-matching-podgroup"),
    pytest.param(_member(BY_TEMPLATE), _my_group(BY_TEMPLATE), GROUP_REF,
                 id="resource-claim-template-name-matching-podgroup"),
    pytest.param(_member(BY_NAME), _my_group(BY_NAME, namespace="not-my-namespace"),
                 "Pod my-namespace/my-pod belongs to PodGroup my-namespace/my-podgroup, not "
                 "PodGroup not-my-namespace/my-podgroup", id="wrong-podgroup-namespace"),
    pytest.param(_member(BY_NAME), _my_group(BY_NAME, name="not-my-podgroup"),
                 "Pod my-namespace/my-pod belongs to PodGroup my-namespace/my-podgroup, not "
                 "PodGroup my-namespace/not-my-podgroup", id="wrong-podgroup-name"),
    pytest.param(_member(BY_NAME), _my_group({"name": "other", "resourceClaimName": "x"}),
                 POD_REF, id="no-matching-claim-in-podgroup"),
    pytest.param(_member(BY_NAME),
                 _my_group({"name": "other", "resourceClaimName": "x"}, BY_NAME), GROUP_REF,
                 id="find-matching-claim-in-podgroup"),
    pytest.param(_member(BY_NAME), _my_group({**BY_NAME, "name": "other-claim"}), POD_REF,
                 id="claim-name-mismatch"),
    pytest.param(_member(BY_NAME), _my_group({**BY_NAME, "resourceClaimName": "other"}),
                 POD_REF, id="claim-resource-claim-name-mismatch"),
    pytest.param(_member(BY_TEMPLATE),
                 _my_group({**BY_TEMPLATE, "resourceClaimTemplateName": "other"}), POD_REF,
                 id="claim-resource-claim-template-name-mismatch"),
    pytest.param(_pod("my-pod", "uid-my-pod", None, "my-namespace", (BY_NAME,)),
                 _my_group(BY_NAME), "Pod my-namespace/my-pod does not belong to a PodGroup",
                 id="pod-in-no-podgroup"),
])
def test_bind_to(pod: api.Pod, group: PodGroup | None,
                 expected: resource.ResourceClaimConsumerReference | str) -> None:
    if isinstance(expected, str):
        with pytest.raises(ClaimUnavailableError) as raised:
            bind_to(pod, group, pod.spec.resource_claims[0])
        assert str(raised.value) == expected
    else:
        assert bind_to(pod, group, pod.spec.resource_claims[0]) == expected


@pytest.mark.parametrize(("entry", "statuses", "expected"), [
    pytest.param({"name": "c", "resourceClaimName": "named"}, (), ("named", False),
                 id="resource-claim-name-set"),
    pytest.param({"name": "c", "resourceClaimTemplateName": "t"},
                 ({"name": "c", "resourceClaimName": "made"},), ("made", True),
                 id="resource-claim-template-name-set-and-status-found"),
    pytest.param({"name": "c", "resourceClaimTemplateName": "t"}, (),
                 "PodGroup kube-system/g: ResourceClaim not created yet",
                 id="resource-claim-template-name-set-but-status-not-found"),
    pytest.param({"name": "c"}, (),
                 "PodGroup kube-system/g, spec.resourceClaim c: none of the supported fields "
                 "are set", id="neither-resource-claim-name-nor-template-name-set"),
])
def test_name_from_pod_group(entry: dict[str, Any], statuses: tuple[dict[str, Any], ...],
                             expected: tuple[str, bool] | str) -> None:
    group = _group("g", "uid-g", claims=(entry,), statuses=statuses)
    group_claim = msgspec.convert(entry, PodGroupResourceClaim)
    if isinstance(expected, str):
        with pytest.raises(ClaimUnavailableError) as raised:
            claim_name_in_group(group, group_claim)
        assert str(raised.value) == expected
    else:
        assert claim_name_in_group(group, group_claim) == expected
