"""ClaimTracker.allocated() with claims PreBind wrote that the informer has not
delivered yet: their devices count, from the claim object each time (what a claim
holds is kept across cycles by the object, so a newer write must not reuse it)."""

from __future__ import annotations

import msgspec

from kpysched.informers.listers import Index
from kpysched.objects import dra as resource
from kpysched.plugins.dynamic_resources.tracker import ClaimTracker


def _claim(name: str, version: str, *devices: str) -> resource.ResourceClaim:
    status = ({"allocation": {"devices": {"results": [
        {"request": "r", "driver": "d", "pool": "p", "device": device}
        for device in devices]}}} if devices else {})
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                      "resourceVersion": version},
         "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}},
         "status": status}, resource.ResourceClaim)


def test_assumed_claims_count_until_the_informer_has_them() -> None:
    claims: Index[resource.ResourceClaim] = Index()
    claims.on_add(_claim("a", "1"))
    claims.on_add(_claim("held", "1", "x"))
    tracker = ClaimTracker(claims)
    assert tracker.allocated().devices == {("d", "p", "x")}
    tracker.assume(_claim("a", "2", "y"))
    assert tracker.allocated().devices == {("d", "p", "x"), ("d", "p", "y")}
    assert tracker.allocated().devices == {("d", "p", "x"), ("d", "p", "y")}  # kept
    tracker.assume(_claim("a", "3", "z"))  # a newer write, another object
    assert tracker.allocated().devices == {("d", "p", "x"), ("d", "p", "z")}
    claims.on_update(_claim("a", "1"), _claim("a", "3", "z"))  # the informer catches up
    assert tracker.allocated().devices == {("d", "p", "x"), ("d", "p", "z")}
    claims.on_delete(_claim("a", "3", "z"))
    assert tracker.allocated().devices == {("d", "p", "x")}
