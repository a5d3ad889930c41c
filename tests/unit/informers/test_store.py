"""The store turns watch events and relists into add / update / delete calls."""

from __future__ import annotations

import pytest

from kpysched.informers.store import Store, object_key
from kpysched.objects.api import ObjectMeta, Pod


def pod(name: str, rv: str, uid: str | None = None) -> Pod:
    return Pod(metadata=ObjectMeta(name=name, namespace="ns", uid=uid or f"uid-{name}",
                                   resource_version=rv))


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def on_add(self, obj: Pod) -> None:
        self.calls.append(f"add {obj.metadata.name}@{obj.metadata.resource_version}")

    def on_update(self, old: Pod, new: Pod) -> None:
        self.calls.append(f"update {new.metadata.name}@"
                          f"{old.metadata.resource_version}->{new.metadata.resource_version}")

    def on_delete(self, obj: Pod) -> None:
        self.calls.append(f"delete {obj.metadata.name}@{obj.metadata.resource_version}")


def test_watch_events() -> None:
    recorder = Recorder()
    store: Store[Pod] = Store(recorder)

    store.upsert(pod("a", "1"))
    store.upsert(pod("a", "2"))
    store.delete(pod("a", "3"))
    store.delete(pod("never-seen", "4"))

    assert recorder.calls == ["add a@1", "update a@1->2", "delete a@3"]
    assert dict(store.objects) == {}


@pytest.mark.parametrize(
    ("before", "listed", "calls"),
    [
        pytest.param([], [pod("a", "1"), pod("b", "2")], ["add a@1", "add b@2"],
                     id="first-list-adds-all"),
        pytest.param([pod("a", "1"), pod("b", "2")], [pod("a", "1"), pod("b", "2")], [],
                     id="unchanged-says-nothing"),
        pytest.param([pod("a", "1"), pod("gone", "2")], [pod("a", "5"), pod("new", "6")],
                     ["update a@1->5", "add new@6", "delete gone@2"],
                     id="changed-new-and-vanished"),
        pytest.param([pod("a", "1", uid="old-uid")], [pod("a", "7", uid="new-uid")],
                     ["add a@7", "delete a@1"], id="recreated-under-same-name"),
    ],
)
def test_replace_reconciles(before: list[Pod], listed: list[Pod], calls: list[str]) -> None:
    recorder = Recorder()
    store: Store[Pod] = Store(recorder)
    for obj in before:
        store.upsert(obj)
    recorder.calls.clear()

    store.replace(listed)

    assert recorder.calls == calls
    assert dict(store.objects) == {object_key(obj.metadata): obj for obj in listed}


def test_objects_view_is_read_only() -> None:
    store: Store[Pod] = Store(Recorder())
    store.upsert(pod("a", "1"))

    with pytest.raises(TypeError):
        store.objects["x"] = pod("x", "1")  # type: ignore[index]


@pytest.mark.parametrize(
    ("meta", "key"),
    [
        pytest.param(ObjectMeta(name="p", namespace="ns", uid="u1"), "u1", id="uid"),
        pytest.param(ObjectMeta(name="p", namespace="ns"), "ns/p", id="namespaced-no-uid"),
        pytest.param(ObjectMeta(name="n"), "n", id="cluster-scoped-no-uid"),
    ],
)
def test_object_key(meta: ObjectMeta, key: str) -> None:
    assert object_key(meta) == key
