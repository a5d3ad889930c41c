"""kpysched/gc_policy.py and the untracked wire structs it relies on."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import msgspec
import pytest

from kpysched import gc_policy
from kpysched.objects import api, coscheduling, scheduling, storage
from kpysched.objects import dra as resource

POD_JSON = b"""{"metadata": {"name": "p", "namespace": "ns", "uid": "u1",
  "labels": {"app": "web"}},
 "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
  "tolerations": [{"key": "k", "operator": "Exists"}]}}"""


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_tune_raises_only_the_young_threshold(restored_gc: None) -> None:
    gc.set_threshold(700, 10, 10)
    gc_policy.tune()
    assert gc.get_threshold() == (gc_policy.YOUNG_ALLOCATIONS, 10, 10)


def test_freeze_hides_what_is_alive_from_the_collector(restored_gc: None) -> None:
    kept = [[index] for index in range(1000)]
    gc_policy.freeze_synced_cache()
    assert gc.get_freeze_count() >= len(kept)
    assert not any(item is kept for item in gc.get_objects())


def test_decoded_objects_are_not_tracked() -> None:
    pod = msgspec.json.decode(POD_JSON, type=api.Pod)
    assert pod.spec.containers[0].resources.requests == {"cpu": "1"}
    assert not gc.is_tracked(pod)
    assert not gc.is_tracked(pod.metadata)
    assert not gc.is_tracked(pod.spec.containers[0])


@pytest.mark.parametrize("module", [api, coscheduling, resource, scheduling, storage])
def test_every_wire_base_is_untracked(module: object) -> None:
    base = module._Wire  # type: ignore[attr-defined]
    assert base.__struct_config__.gc is False


def test_importing_collects_nothing_inside_and_freezes_what_it_made(
        restored_gc: None) -> None:
    assert gc.isenabled()
    with gc_policy.importing():
        assert not gc.isenabled()
        made = [[index] for index in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made)
    gc.disable()
    try:
        with gc_policy.importing():
            pass
        assert not gc.isenabled()  # one that was off stays off
    finally:
        gc.enable()
    with pytest.raises(ValueError), gc_policy.importing():
        raise ValueError("an import that fails")
    assert gc.isenabled()
