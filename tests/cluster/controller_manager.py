"""kube-controller-manager for the test cluster, from the same pinned release.

It makes the loopback cluster behave like a real one: the `default` ServiceAccount
appears in new namespaces, deleted namespaces are emptied and finalized,
Deployments/ReplicaSets/StatefulSets/Jobs/DaemonSets create their pods, the
garbage collector removes dependents, PDBs get a status, PersistentVolumeClaims
are bound, ResourceClaims are made from templates, and node lifecycle lifts the
`not-ready` taint from Ready nodes and taints the ones that stop heartbeating.

The flags, and why each is set:

* `--controllers=*`: every controller that upstream enables by default, which
  includes all the ones scheduler users depend on (namespace, serviceaccount,
  serviceaccount-token, garbage-collector, replicaset, deployment, statefulset,
  job, cronjob, daemonset, persistentvolume-binder/-expander, resourceclaim,
  disruption, node-lifecycle, taint-eviction, pod-garbage-collector, ttl, ...).
  The three it leaves off (bootstrapsigner, tokencleaner, selinux-warning) serve
  kubeadm-style joins and SELinux audits, which nothing here uses. The cloud
  controllers skip themselves: there is no cloud provider.
* `--kubeconfig` (and the authentication/authorization kubeconfigs): a client
  certificate for `system:kube-controller-manager`, the user the bootstrap RBAC
  policy already binds to the controller manager's ClusterRole, so it runs with
  the permissions it has in a real cluster rather than as the admin.
* `--use-service-account-credentials`: each controller then acts as its own
  ServiceAccount in kube-system (system:controller:*), bound by bootstrap RBAC,
  as kubeadm runs it; RBAC mistakes show up here as they would in production.
* `--service-account-private-key-file` (the key kube-apiserver signs tokens with)
  and `--root-ca-file`: the token controller fills `kubernetes.io/service-account-token`
  Secrets, and the root-CA publisher writes the `kube-root-ca.crt` ConfigMap into
  every namespace, which projected service-account volumes need.
* `--cluster-signing-cert-file/--cluster-signing-key-file` (the cluster CA): the
  CSR signer can issue certificates, e.g. kubelet client certificates.
* `--leader-elect=false`: the harness runs exactly one instance per cluster
  directory, so there is nobody to elect against; with it on, a restarted
  controller manager would first wait out the old instance's Lease (up to 15s)
  and the cluster would write a Lease every 2s for nothing.
* `--kube-api-qps=100 --kube-api-burst=200`: the default 20/30 makes a ReplicaSet
  of a few thousand pods (KWOK scale tests) take minutes to create.
* `--bind-address=127.0.0.1 --secure-port=<free>`: health on loopback only, on a
  port of its own so several clusters (pytest, run-local) can run side by side.
* `--node-monitor-grace-period` only when the caller asks: upstream's 50s is the
  default, and KWOK nodes renew their Leases well within it. A cluster whose
  Nodes are hand-made API objects without a kubelet or a Lease (the pytest
  session cluster) passes a long one, else node lifecycle would mark those Nodes
  Unknown and taint them `unreachable` in the middle of a test.
* `--feature-gates` only for a cluster started with gates (`gates.py`): the same as
  kube-apiserver's, since controllers of an alpha API (e.g. podgroup-protection for
  GenericWorkload) run only with their gate on.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.error
from pathlib import Path

from tests.cluster import build, certs, kubeconfig, processes
from tests.cluster.gates import feature_gates_args
from tests.cluster.state import ClusterState, Component

NAME = "kube-controller-manager"
USER = "system:kube-controller-manager"
READY_TIMEOUT_SECONDS = 90.0


def command(state: ClusterState, port: int, node_monitor_grace_period: str | None,
            disabled_controllers: tuple[str, ...] = ()) -> list[str]:
    pki = state.pki
    config = Path(state.dir, "controller-manager.kubeconfig")
    args = [
        str(build.binary_path(NAME, state.release)),
        f"--kubeconfig={config}",
        f"--authentication-kubeconfig={config}",
        f"--authorization-kubeconfig={config}",
        ",".join(["--controllers=*", *(f"-{name}" for name in disabled_controllers)]),
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--root-ca-file={pki / 'ca.crt'}",
        f"--cluster-signing-cert-file={pki / 'ca.crt'}",
        f"--cluster-signing-key-file={pki / 'ca.key'}",
        "--leader-elect=false",
        "--kube-api-qps=100",
        "--kube-api-burst=200",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={Path(state.dir, 'controller-manager')}",
        *feature_gates_args(state.feature_gates),
    ]
    if node_monitor_grace_period is not None:
        args.append(f"--node-monitor-grace-period={node_monitor_grace_period}")
    return args


def launch(state: ClusterState, *, node_monitor_grace_period: str | None = None,
           disabled_controllers: tuple[str, ...] = ()) -> Component:
    """Start it; `wait_ready` then waits until its controllers are at work."""
    cert, key = certs.client_certificate(state.pki, "controller-manager", USER)
    kubeconfig.write(Path(state.dir, "controller-manager.kubeconfig"), server=state.server,
                     ca_file=state.ca_file, user=USER, cert=cert, key=key)
    port = processes.free_port()
    log = Path(state.dir, f"{NAME}.log")
    args = command(state, port, node_monitor_grace_period, disabled_controllers)
    return Component(NAME, processes.spawn(args, log), args, str(log),
                     health_url=f"https://127.0.0.1:{port}/healthz")


def restart(state: ClusterState, component: Component) -> None:
    """Stop it and start it again, on a secure port free now: its old port may have
    been taken as an ephemeral port by some client while it was down (seen in CI:
    "bind: address already in use")."""
    processes.stop(component.pid)
    port = processes.free_port()
    component.command = [f"--secure-port={port}" if arg.startswith("--secure-port=") else arg
                         for arg in component.command]
    component.health_url = f"https://127.0.0.1:{port}/healthz"
    component.pid = processes.spawn(component.command, Path(component.log))
    state.save()
    wait_ready(state, component)


def wait_ready(state: ClusterState, component: Component) -> None:
    def healthy_and_working() -> bool:
        if processes.http_get(component.health_url,
                              context=processes.insecure_tls()).strip() != "ok":
            return False
        # The serviceaccount controller creating `default` in namespace `default`
        # shows the controllers run with working credentials, not only the server.
        processes.http_get(
            f"{state.server}/api/v1/namespaces/default/serviceaccounts/default",
            context=processes.ca_tls(state.ca_file),
            headers={"Authorization": f"Bearer {state.token}"})
        return True

    processes.wait_until(NAME, component.pid, component.log, healthy_and_working,
                         READY_TIMEOUT_SECONDS)


def serves_new_namespaces(state: ClusterState, timeout: float) -> bool:
    """Whether a namespace created now gets its `default` ServiceAccount within `timeout`.

    After an API server outage, client-go's reflectors reconnect with a backoff that
    doubles per failure up to 30s (plus jitter) and resets only after two quiet
    minutes, so a controller manager that saw several restarts in a row can take a
    minute to notice a new namespace. The probe namespace is deleted again.
    """
    context = processes.ca_tls(state.ca_file)
    headers = {"Authorization": f"Bearer {state.token}", "Content-Type": "application/json"}
    name = f"harness-probe-{secrets.token_hex(3)}"
    namespaces = f"{state.server}/api/v1/namespaces"
    processes.http_get(namespaces, context=context, headers=headers, method="POST",
                       data=json.dumps({"metadata": {"name": name}}).encode())
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                processes.http_get(f"{namespaces}/{name}/serviceaccounts/default",
                                   context=context, headers=headers)
                return True
            except urllib.error.HTTPError as error:
                if error.code != 404:
                    raise
            time.sleep(0.1)
        return False
    finally:
        processes.http_get(f"{namespaces}/{name}", context=context, headers=headers,
                           method="DELETE")
