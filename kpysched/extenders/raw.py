"""The JSON each pod and node arrived in from the API server, for the objects the
informers hold now: upstream sends extenders the whole objects of its informer cache,
and kpysched's slim objects hold only what scheduling reads.

The informers hand every decoded object over with its bytes (informers/decode.py's
keep_raw). An object is looked up by identity (the informer's object, not a copy), so a
stale body is never sent for an updated object; anything else (a pod kpysched assumed
itself, a simulation) falls back to encoding the slim object. Entries of objects the
informer no longer holds are dropped now and then, checked against its store.

As kube-scheduler's pod informer does (newPodInformer's transform), pods are sent
without metadata.managedFields; like its typed objects, without kind and apiVersion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec

from kpysched.objects import api

_MIN_PRUNE_INTERVAL: Final = 1024

Kept = api.Pod | api.Node


class RawObjects:
    def __init__(self, *, drop_managed_fields: bool) -> None:
        # uid -> (the informer's object, its JSON, whether that JSON is already trimmed,
        # the prune round it was kept in)
        self._by_uid: dict[str, tuple[Kept, bytes, bool, int]] = {}
        self._round = 0
        self._drop_managed_fields = drop_managed_fields
        self._live: Callable[[], Mapping[str, Any]] | None = None
        self._kept_since_prune = 0
        self._prune_after = _MIN_PRUNE_INTERVAL

    def __len__(self) -> int:
        return len(self._by_uid)

    def follow(self, live: Callable[[], Mapping[str, Any]]) -> None:
        """The informer's store (by uid), to drop what it no longer holds."""
        self._live = live

    def keep(self, obj: Kept, raw: bytes) -> None:
        """informers' keep_raw: the object as decoded and the bytes it came from."""
        self._by_uid[obj.metadata.uid] = (obj, raw, False, self._round)
        self._kept_since_prune += 1
        if self._live is not None and self._kept_since_prune > self._prune_after:
            self._prune(self._live())

    def json_of(self, obj: Kept) -> bytes | None:
        """The object's JSON as upstream would send it; None when not kept."""
        uid = obj.metadata.uid
        entry = self._by_uid.get(uid)
        if entry is None or entry[0] is not obj:
            return None
        _, raw, trimmed, kept_in = entry
        if not trimmed:
            raw = self._trimmed(raw)
            self._by_uid[uid] = (obj, raw, True, kept_in)
        return raw

    def _trimmed(self, raw: bytes) -> bytes:
        document = msgspec.json.decode(raw)
        document.pop("kind", None)
        document.pop("apiVersion", None)
        if self._drop_managed_fields:
            (document.get("metadata") or {}).pop("managedFields", None)
        return msgspec.json.encode(document)

    def _prune(self, live: Mapping[str, Any]) -> None:
        """Drop what the store holds no longer (or holds a newer version of). Objects
        kept this round may not have reached the store yet (a list page is decoded
        whole before it is delivered): they wait for the next round."""
        current = self._round
        self._by_uid = {uid: entry for uid, entry in self._by_uid.items()
                        if entry[3] == current or live.get(uid) is entry[0]}
        self._round += 1
        self._kept_since_prune = 0
        # As many objects kept again as are held now: the cost stays linear.
        self._prune_after = max(len(self._by_uid), _MIN_PRUNE_INTERVAL)
