"""Start, stop and restart the loopback test cluster.

etcd and kube-apiserver always run; `Addons` says what runs beside them:
kube-controller-manager (`controller_manager.py`) and KWOK (`kwok.py`, simulated
nodes). The CLI's `up` starts everything, a cluster that behaves like a real one;
the Python default is the bare pair, which is what benchmarks measure against (as
upstream's scheduler_perf does) and what nothing else disturbs. `Gates` (`gates.py`)
turn upstream feature gates and alpha API versions on for the control plane.

State lives in one directory (default `.cluster/`): etcd data, certificates, logs,
the admin kubeconfig and `state.json`, which records what a later `down` or
`restart-apiserver` needs (pids, ports, command lines, log paths). Processes run in
their own sessions so the cluster outlives the command that started it.
"""

from __future__ import annotations

import json
import secrets
import shutil
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.cluster import build, certs, controller_manager, kubeconfig, kwok, releases
from tests.cluster.gates import UPSTREAM_DEFAULTS, Gates, feature_gates_args, runtime_config_args
from tests.cluster.processes import LOG_TAIL_LINES, ClusterError, free_port, log_tail
from tests.cluster.processes import alive as _alive
from tests.cluster.processes import http_get as _http_get
from tests.cluster.processes import insecure_tls as _insecure_tls
from tests.cluster.processes import spawn as _spawn
from tests.cluster.processes import stop as _stop
from tests.cluster.processes import wait_until as _wait_until
from tests.cluster.state import ClusterState, Component

# Re-exported: tests and benchmarks import these from here.
__all__ = ["LOG_TAIL_LINES", "Addons", "ClusterError", "ClusterState", "Component", "Gates",
           "down", "free_port", "log_tail", "readyz", "restart_apiserver", "up"]

DEFAULT_DIR = Path(".cluster")
READY_TIMEOUT_SECONDS = 90.0


@dataclass(frozen=True, slots=True)
class Addons:
    """Processes started beside etcd and kube-apiserver, in this order."""

    controller_manager: bool = False
    kwok: bool = False
    # kube-controller-manager's --node-monitor-grace-period; None keeps upstream's 50s.
    # Only a cluster of hand-made Nodes (no kubelet, no Lease) needs a longer one.
    node_monitor_grace_period: str | None = None
    # kube-controller-manager's controllers to leave off (--controllers=*,-name), for
    # a test whose scenario one of them would undo.
    disabled_controllers: tuple[str, ...] = ()


BARE = Addons()
# What `python -m tests.cluster up` starts: a cluster that works like one.
FULL = Addons(controller_manager=True, kwok=True)


def _ssl_context(ca_file: str) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=ca_file)


def readyz(state: ClusterState, timeout: float = 2.0) -> str:
    """GET /readyz with the admin token; returns the body ('ok' when ready)."""
    request = urllib.request.Request(
        f"{state.server}/readyz", headers={"Authorization": f"Bearer {state.token}"}
    )
    with urllib.request.urlopen(request, timeout=timeout, context=_ssl_context(state.ca_file)) as r:
        body: bytes = r.read()
        return body.decode()


def wait_etcd(state: ClusterState) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    url = f"http://127.0.0.1:{state.etcd_client_port}/health"
    while time.monotonic() < deadline:
        if not _alive(state.etcd_pid):
            raise ClusterError(f"etcd exited during start-up; last lines of {state.etcd_log}:\n"
                               f"{log_tail(state.etcd_log)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if json.loads(response.read()).get("health") == "true":
                    return
        except (urllib.error.URLError, ConnectionError, OSError, ValueError):
            pass
        time.sleep(0.2)
    raise ClusterError(f"etcd not healthy after {READY_TIMEOUT_SECONDS:.0f}s; last lines of "
                       f"{state.etcd_log}:\n{log_tail(state.etcd_log)}")


def wait_apiserver(state: ClusterState) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    last_error = ""
    while time.monotonic() < deadline:
        if not _alive(state.apiserver_pid):
            raise ClusterError(
                f"kube-apiserver exited during start-up; last lines of {state.apiserver_log}:\n"
                f"{log_tail(state.apiserver_log)}"
            )
        try:
            if readyz(state).strip() == "ok":
                return
        except urllib.error.HTTPError as error:
            last_error = f"HTTP {error.code}"
        except (urllib.error.URLError, ConnectionError, OSError) as error:
            last_error = str(error)
        time.sleep(0.25)
    raise ClusterError(
        f"kube-apiserver not ready after {READY_TIMEOUT_SECONDS:.0f}s ({last_error}); last lines "
        f"of {state.apiserver_log}:\n{log_tail(state.apiserver_log)}"
    )


def _apiserver_command(directory: Path, etcd_port: int, port: int,
                       *, release: str, garbage_collector: bool = False,
                       gates: Gates = UPSTREAM_DEFAULTS) -> list[str]:
    pki = directory / "pki"
    return [
        str(build.binary_path("kube-apiserver", release)),
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--token-auth-file={directory / 'tokens.csv'}",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "--api-audiences=https://kubernetes.default.svc.cluster.local",
        f"--service-cluster-ip-range={certs.SERVICE_CLUSTER_IP_RANGE}",
        "--authorization-mode=Node,RBAC",
        "--allow-privileged=true",
        # Must match the controller manager's garbage collector: with it on and no
        # collector running, foreground deletions would wait on their finalizer forever.
        f"--enable-garbage-collector={str(garbage_collector).lower()}",
        # The reconciler would publish 127.0.0.1 as the `kubernetes` Service's endpoint,
        # which Endpoints validation rejects (loopback); nothing here routes to it.
        "--endpoint-reconciler-type=none",
        # Logs, exec and port-forward reach the real node's kubelet at the Node's
        # InternalIP (its name resolves nowhere), authenticated with a client certificate.
        "--kubelet-preferred-address-types=InternalIP,Hostname,InternalDNS,ExternalDNS,"
        "ExternalIP",
        f"--kubelet-client-certificate={pki / (certs.KUBELET_CLIENT + '.crt')}",
        f"--kubelet-client-key={pki / (certs.KUBELET_CLIENT + '.key')}",
        # The aggregation layer (kpysched's decisions API is served through it). Routing
        # to endpoint IPs, not the Service's ClusterIP: nothing routes Service IPs on
        # the loopback cluster, while an endpoint on the host's own non-loopback address
        # is reachable and passes Endpoints validation.
        f"--requestheader-client-ca-file={pki / (certs.FRONT_PROXY_CA + '.crt')}",
        f"--requestheader-allowed-names={certs.FRONT_PROXY_CLIENT}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        "--requestheader-uid-headers=X-Remote-Uid",
        f"--proxy-client-cert-file={pki / (certs.FRONT_PROXY_CLIENT + '.crt')}",
        f"--proxy-client-key-file={pki / (certs.FRONT_PROXY_CLIENT + '.key')}",
        "--enable-aggregator-routing=true",
        *feature_gates_args(gates.feature_gates),
        *runtime_config_args(gates.runtime_config),
    ]


def up(directory: Path = DEFAULT_DIR, addons: Addons = BARE,
       gates: Gates = UPSTREAM_DEFAULTS, release: str | None = None) -> ClusterState:
    """Start etcd, kube-apiserver and the addons; return once every one is ready.

    `gates` go to kube-apiserver and kube-controller-manager and are kept in the
    returned state for the schedulers started later (see gates.py). `release` ("1.37")
    picks the control plane; None means KPYSCHED_TEST_RELEASE, else the default
    (releases.py). The state records it (`kubernetes_version`, `release`), and whatever
    starts against the cluster later (kube-scheduler, KWOK's nodes) follows it."""
    chosen = releases.selected(release)
    directory = directory.resolve()
    if (directory / "state.json").exists():
        raise ClusterError(
            f"{directory} already holds a cluster: run `down --dir {directory}` first")
    build.ensure_built(build.CORE, [chosen.name])
    directory.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(24)
    (directory / "tokens.csv").write_text(f'{token},admin,admin-uid,"system:masters"\n')

    etcd_client_port, etcd_peer_port, apiserver_port = free_port(), free_port(), free_port()
    peer_url = f"http://127.0.0.1:{etcd_peer_port}"
    client_url = f"http://127.0.0.1:{etcd_client_port}"
    etcd_command = [
        str(build.binary_path("etcd")), "--name=default", f"--data-dir={directory / 'etcd'}",
        f"--listen-client-urls={client_url}", f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=default={peer_url}",
        # Test data is disposable; fsync on every write only slows the suite down.
        "--unsafe-no-fsync",
    ]
    etcd_log = directory / "etcd.log"
    apiserver_log = directory / "kube-apiserver.log"
    apiserver_command = _apiserver_command(directory, etcd_client_port, apiserver_port,
                                           release=chosen.name,
                                           garbage_collector=addons.controller_manager,
                                           gates=gates)
    state = ClusterState(
        dir=str(directory), etcd_pid=_spawn(etcd_command, etcd_log),
        etcd_client_port=etcd_client_port, etcd_peer_port=etcd_peer_port,
        etcd_log=str(etcd_log), etcd_command=etcd_command, apiserver_pid=0,
        apiserver_port=apiserver_port, apiserver_log=str(apiserver_log),
        apiserver_command=apiserver_command, token=token,
        kubeconfig=str(directory / "kubeconfig"), ca_file=str(directory / "pki" / "ca.crt"),
        kubernetes_version=chosen.kubernetes_version,
        feature_gates=dict(gates.feature_gates), runtime_config=list(gates.runtime_config),
    )
    state.save()
    try:
        # While etcd starts (plain HTTP on loopback: it needs none of them), the
        # certificates: a few seconds of openssl that every cluster start paid before.
        certs.generate(directory / "pki")
        wait_etcd(state)
        state.apiserver_pid = _spawn(apiserver_command, apiserver_log)
        state.save()
        wait_apiserver(state)
        kubeconfig.write(Path(state.kubeconfig), server=state.server, ca_file=state.ca_file,
                         user="admin", token=token)
        _start_addons(state, addons)
    except BaseException:
        _stop_processes(state)
        raise
    return state


def _start_addons(state: ClusterState, addons: Addons) -> None:
    # Each is recorded before waiting on it, so a failed start is still stopped. Both
    # are launched before either is waited for: KWOK needs only the API server, and
    # starts while the controller manager does.
    manager = simulator = None
    if addons.controller_manager:
        manager = controller_manager.launch(
            state, node_monitor_grace_period=addons.node_monitor_grace_period,
            disabled_controllers=addons.disabled_controllers)
        _record(state, manager)
    if addons.kwok:
        simulator = kwok.launch(state)
        _record(state, simulator)
    if manager is not None:
        controller_manager.wait_ready(state, manager)
    if simulator is not None:
        kwok.wait_ready(simulator)


def _record(state: ClusterState, component: Component) -> None:
    state.components.append(component)
    state.save()


def _stop_processes(state: ClusterState) -> None:
    for component in reversed(state.components):
        _stop(component.pid)
    if state.apiserver_pid:
        _stop(state.apiserver_pid)
    _stop(state.etcd_pid)


def down(directory: Path = DEFAULT_DIR) -> None:
    """Stop every process of the cluster and remove its directory."""
    directory = directory.resolve()
    # The real node (`up --with-node`) first: its pods' mounts live under the directory.
    # Imported here because it builds on this module.
    from tests.cluster.realnode import node as real_node
    node_problems = real_node.stop(directory)
    try:
        state = ClusterState.load(directory)
    except ClusterError:
        state = None
    if state is not None:
        _stop_processes(state)
    shutil.rmtree(directory, ignore_errors=True)
    if node_problems:
        raise ClusterError(f"the real node did not clean up: {'; '.join(node_problems)}")


APISERVER_RESTART_STOP_SECONDS = 1.0
CONTROLLERS_BACK_SECONDS = 10.0


def restart_apiserver(directory: Path = DEFAULT_DIR) -> ClusterState:
    """Stop kube-apiserver and start it again on the same port; etcd keeps the data.

    The addons keep running: their clients retry and re-list, as against a real
    control plane. One that exited meanwhile is started again with its command.
    """
    state = ClusterState.load(directory.resolve())
    # kube-apiserver's graceful shutdown waits on the clients' open watches until it is
    # killed (15s here). Every second of outage lengthens the clients' reconnect backoff
    # (client-go doubles it up to 30s), so the restart stands for a quick one, as a
    # crashed or OOM-killed server restarted by the kubelet would be.
    _stop(state.apiserver_pid, timeout=APISERVER_RESTART_STOP_SECONDS)
    state.apiserver_pid = _spawn(state.apiserver_command, Path(state.apiserver_log))
    state.save()
    wait_apiserver(state)
    for component in state.components:
        if not _alive(component.pid):
            component.pid = _spawn(component.command, Path(component.log))
            state.save()
        _wait_component(component)
        if component.name == controller_manager.NAME and not \
                controller_manager.serves_new_namespaces(state, CONTROLLERS_BACK_SECONDS):
            # Its informers are still backing off (see serves_new_namespaces); the next
            # test would wait up to a minute for a ServiceAccount. Tests restart the API
            # server to test kpysched, not the controller manager, so start it afresh.
            controller_manager.restart(state, component)
    return state


def _wait_component(component: Component) -> None:
    if not component.health_url:
        return
    # Components serve health on certificates of their own, not signed by the cluster CA.
    context = _insecure_tls() if component.health_url.startswith("https:") else None
    _wait_until(component.name, component.pid, component.log,
                lambda: _http_get(component.health_url, context=context).strip() == "ok",
                READY_TIMEOUT_SECONDS)
