"""A test provisioner: the part of an external CSI provisioner that scheduling sees.

No CSI driver runs here, yet WaitForFirstConsumer claims of a provisioning class
must end bound as on a real cluster. The scheduler's VolumeBinding PreBind writes
`volume.kubernetes.io/selected-node` on the claim and waits; kube-controller-manager's
PV controller then marks the claim `volume.kubernetes.io/storage-provisioner:
<class provisioner>` and waits for that provisioner. This loop plays it, as
sig-storage-lib-external-provisioner does: for a claim so marked with a provisioner
name it serves, it creates a PersistentVolume named `pvc-<claim uid>` with the claim's
size and access modes, the class's reclaim policy and mount options, a CSI source of
that driver, node affinity to the selected node's hostname, a claimRef to the claim
and `pv.kubernetes.io/provisioned-by`; the PV controller binds the two. A volume it
provisioned that is Released under the Delete policy it deletes, as a provisioner's
deleter does. It never binds anything itself.

It serves `provisioner.kpysched.test` and every `<name>.provisioner.kpysched.test`,
so each test can name a driver of its own. A claim annotated
`provisioner.kpysched.test/hold` is never provisioned: its pod's VolumeBinding PreBind
waits (up to bindTimeoutSeconds), so a test can act on a pod still in PreBind.
Run it beside a cluster with `ProvisionerProcess(state)` (a process, like the
Deployment an external provisioner is), or `python -m tests.cluster.provisioner --dir
.cluster` in the foreground.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster.processes import ClusterError, log_tail
from tests.cluster.processes import stop as stop_process
from tests.cluster.state import ClusterState

DOMAIN = "provisioner.kpysched.test"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_HOLD = f"{DOMAIN}/hold"
HOSTNAME = "kubernetes.io/hostname"
READY = "provisioner.ready"
START_TIMEOUT_SECONDS = 30.0
WATCH_SECONDS = 60


def serves(provisioner: str) -> bool:
    return provisioner == DOMAIN or provisioner.endswith(f".{DOMAIN}")


def volume_name(claim_uid: str) -> str:
    """The PV a claim gets, named as external-provisioner names it."""
    return f"pvc-{claim_uid}"


def _log(event: str, **fields: object) -> None:
    print(" ".join([event, *(f"{k}={v}" for k, v in fields.items())]), flush=True)


def _volume_body(claim: Any, storage_class: Any, provisioner: str, node: str) -> dict[str, Any]:
    spec = claim.spec
    size = (spec.resources.requests or {}).get("storage", "1Gi")
    body: dict[str, Any] = {
        "metadata": {"name": volume_name(claim.metadata.uid),
                     "annotations": {ANN_PROVISIONED_BY: provisioner}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": list(spec.access_modes or ["ReadWriteOnce"]),
            "volumeMode": spec.volume_mode or "Filesystem",
            "storageClassName": storage_class.metadata.name,
            "persistentVolumeReclaimPolicy": storage_class.reclaim_policy or "Delete",
            "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                         "namespace": claim.metadata.namespace, "name": claim.metadata.name,
                         "uid": claim.metadata.uid,
                         "resourceVersion": claim.metadata.resource_version},
            "csi": {"driver": provisioner, "volumeHandle": volume_name(claim.metadata.uid)},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": HOSTNAME, "operator": "In", "values": [node]}]}]}},
        },
    }
    if storage_class.mount_options:
        body["spec"]["mountOptions"] = list(storage_class.mount_options)
    return body


async def _provision(api: client.ApiClient, claim: Any) -> None:
    annotations = claim.metadata.annotations or {}
    provisioner = (annotations.get(ANN_STORAGE_PROVISIONER)
                   or annotations.get(ANN_BETA_STORAGE_PROVISIONER) or "")
    node = annotations.get(ANN_SELECTED_NODE)
    if (not serves(provisioner) or not node or claim.spec.volume_name or ANN_HOLD in annotations
            or claim.metadata.deletion_timestamp or not claim.spec.storage_class_name):
        return
    try:
        storage_class = await client.StorageV1Api(api).read_storage_class(
            claim.spec.storage_class_name)
    except ApiException as error:
        if error.status == 404:
            return
        raise
    if storage_class.provisioner != provisioner:
        return
    try:
        await client.CoreV1Api(api).create_persistent_volume(
            _volume_body(claim, storage_class, provisioner, node))
    except ApiException as error:
        if error.status == 409:  # provisioned on an earlier event
            return
        raise
    _log("provisioner.provisioned", claim=f"{claim.metadata.namespace}/{claim.metadata.name}",
         volume=volume_name(claim.metadata.uid), node=node)


async def _delete_released(api: client.ApiClient, volume: Any) -> None:
    annotations = volume.metadata.annotations or {}
    if (not serves(annotations.get(ANN_PROVISIONED_BY, ""))
            or volume.spec.persistent_volume_reclaim_policy != "Delete"
            or (volume.status.phase if volume.status else "") != "Released"
            or volume.metadata.deletion_timestamp):
        return
    try:
        await client.CoreV1Api(api).delete_persistent_volume(volume.metadata.name)
    except ApiException as error:
        if error.status != 404:
            raise
        return
    _log("provisioner.deleted", volume=volume.metadata.name)


async def _follow(list_call: Callable[..., Awaitable[Any]],
                  handle: Callable[[Any], Awaitable[None]], ready: asyncio.Event) -> None:
    """List, then watch from there, handling every object added or modified; relist
    when the watch expires (410)."""
    while True:
        listed = await list_call()
        for item in listed.items:
            await handle(item)
        ready.set()
        version = listed.metadata.resource_version
        try:
            while True:
                stream = watch.Watch()
                async with stream.stream(list_call, resource_version=version,
                                         timeout_seconds=WATCH_SECONDS) as events:
                    async for event in events:
                        obj = event["object"]
                        version = obj.metadata.resource_version
                        if event["type"] in ("ADDED", "MODIFIED"):
                            await handle(obj)
        except ApiException as error:
            if error.status != 410:
                raise


async def run(api: client.ApiClient, on_ready: Callable[[], None] = lambda: None) -> None:
    """Provision and delete until cancelled; `on_ready` once both lists are handled."""
    core = client.CoreV1Api(api)
    claims_ready, volumes_ready = asyncio.Event(), asyncio.Event()

    async def announce() -> None:
        await claims_ready.wait()
        await volumes_ready.wait()
        on_ready()

    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(_follow(core.list_persistent_volume_claim_for_all_namespaces,
                                  lambda claim: _provision(api, claim), claims_ready))
        tasks.create_task(_follow(core.list_persistent_volume,
                                  lambda volume: _delete_released(api, volume), volumes_ready))
        tasks.create_task(announce())


class ProvisionerProcess:
    """`with ProvisionerProcess(state):` runs the provisioner as a process of its own."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.log_path = Path(tempfile.mkdtemp(prefix="provisioner-", dir=state.dir),
                             "provisioner.log")
        self.process: subprocess.Popen[bytes] | None = None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __enter__(self) -> ProvisionerProcess:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.cluster.provisioner", "--dir", self.state.dir],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ClusterError(f"the test provisioner exited with {self.process.returncode};"
                                   f" last lines of {self.log_path}:\n{log_tail(self.log_path)}")
            if READY in self.log():
                return self
            time.sleep(0.1)
        self.__exit__(None, None, None)
        raise ClusterError(f"the test provisioner was not ready within {START_TIMEOUT_SECONDS:.0f}"
                           f"s; last lines of {self.log_path}:\n{log_tail(self.log_path)}")

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.process is not None and self.process.poll() is None:
            stop_process(self.process.pid)
            self.process.wait()


async def _main(directory: Path) -> None:
    from tests.cluster import kube  # kube imports the cluster module; keep this light

    state = ClusterState.load(directory.resolve())
    async with kube.api_client(state) as api:
        await run(api, on_ready=lambda: _log(READY, domain=DOMAIN))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path(".cluster"), help="cluster directory")
    asyncio.run(_main(parser.parse_args().dir))
