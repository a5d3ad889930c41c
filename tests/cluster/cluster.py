"""Start, stop and restart a loopback etcd + kube-apiserver pair.

State lives in one directory (default `.cluster/`): etcd data, certificates, logs,
the admin kubeconfig and `state.json`, which records what a later `down` or
`restart-apiserver` needs (pids, ports, command lines, log paths). Processes run in
their own sessions so the cluster outlives the command that started it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.cluster import build, certs

DEFAULT_DIR = Path(".cluster")
READY_TIMEOUT_SECONDS = 90.0
LOG_TAIL_LINES = 30


class ClusterError(RuntimeError):
    """The cluster could not be started or reached; the message says why."""


@dataclass(slots=True)
class ClusterState:
    dir: str
    etcd_pid: int
    etcd_client_port: int
    etcd_peer_port: int
    etcd_log: str
    etcd_command: list[str]
    apiserver_pid: int
    apiserver_port: int
    apiserver_log: str
    apiserver_command: list[str]
    token: str
    kubeconfig: str
    ca_file: str
    kubernetes_version: str

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    def save(self) -> None:
        Path(self.dir, "state.json").write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, directory: Path) -> ClusterState:
        path = directory / "state.json"
        if not path.is_file():
            raise ClusterError(
                f"no cluster state at {path}: run `python -m tests.cluster up` first")
        fields = json.loads(path.read_text())
        return cls(**fields)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def log_tail(path: str | Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        content = Path(path).read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return f"(no log at {path})"
    return "\n".join(content[-lines:])


def _spawn(command: list[str], log_path: Path) -> int:
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return process.pid


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False  # our own child that already exited (now reaped)
    except ChildProcessError:
        pass  # not our child: fall back to a signal probe
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie that is not ours still answers kill(0); /proc tells the truth.
    try:
        status = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return status != "Z"


def _stop(pid: int, timeout: float = 15.0) -> None:
    if not _alive(pid):
        return
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    while _alive(pid):
        time.sleep(0.05)


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


def _wait_etcd(state: ClusterState) -> None:
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


def _wait_apiserver(state: ClusterState) -> None:
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


def _write_kubeconfig(path: Path, server: str, ca_file: str, token: str) -> None:
    # JSON is valid YAML, so every kubeconfig reader accepts it.
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kpysched-test", "cluster": {
            "server": server, "certificate-authority": ca_file}}],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": "kpysched-test", "context": {
            "cluster": "kpysched-test", "user": "admin"}}],
        "current-context": "kpysched-test",
    }
    path.write_text(json.dumps(config, indent=2))


def _apiserver_command(directory: Path, etcd_port: int, port: int) -> list[str]:
    pki = directory / "pki"
    return [
        str(build.binary_path("kube-apiserver")),
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
        # The harness runs no kube-controller-manager; nothing else needs these.
        "--enable-garbage-collector=false",
        "--endpoint-reconciler-type=none",
    ]


def up(directory: Path = DEFAULT_DIR) -> ClusterState:
    """Start etcd and kube-apiserver; return the state once /readyz says ok."""
    directory = directory.resolve()
    if (directory / "state.json").exists():
        raise ClusterError(
            f"{directory} already holds a cluster: run `down --dir {directory}` first")
    bin_dir = build.ensure_built()
    directory.mkdir(parents=True, exist_ok=True)
    certs.generate(directory / "pki")
    token = secrets.token_hex(24)
    (directory / "tokens.csv").write_text(f'{token},admin,admin-uid,"system:masters"\n')

    etcd_client_port, etcd_peer_port, apiserver_port = free_port(), free_port(), free_port()
    peer_url = f"http://127.0.0.1:{etcd_peer_port}"
    client_url = f"http://127.0.0.1:{etcd_client_port}"
    etcd_command = [
        str(bin_dir / "etcd"), "--name=default", f"--data-dir={directory / 'etcd'}",
        f"--listen-client-urls={client_url}", f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=default={peer_url}",
        # Test data is disposable; fsync on every write only slows the suite down.
        "--unsafe-no-fsync",
    ]
    etcd_log = directory / "etcd.log"
    apiserver_log = directory / "kube-apiserver.log"
    apiserver_command = _apiserver_command(directory, etcd_client_port, apiserver_port)
    state = ClusterState(
        dir=str(directory), etcd_pid=_spawn(etcd_command, etcd_log),
        etcd_client_port=etcd_client_port, etcd_peer_port=etcd_peer_port,
        etcd_log=str(etcd_log), etcd_command=etcd_command, apiserver_pid=0,
        apiserver_port=apiserver_port, apiserver_log=str(apiserver_log),
        apiserver_command=apiserver_command, token=token,
        kubeconfig=str(directory / "kubeconfig"), ca_file=str(directory / "pki" / "ca.crt"),
        kubernetes_version=build.KUBERNETES_VERSION,
    )
    state.save()
    try:
        _wait_etcd(state)
        state.apiserver_pid = _spawn(apiserver_command, apiserver_log)
        state.save()
        _wait_apiserver(state)
    except BaseException:
        _stop_processes(state)
        raise
    _write_kubeconfig(Path(state.kubeconfig), state.server, state.ca_file, token)
    return state


def _stop_processes(state: ClusterState) -> None:
    if state.apiserver_pid:
        _stop(state.apiserver_pid)
    _stop(state.etcd_pid)


def down(directory: Path = DEFAULT_DIR) -> None:
    """Stop both processes and remove the directory."""
    directory = directory.resolve()
    try:
        state = ClusterState.load(directory)
    except ClusterError:
        state = None
    if state is not None:
        _stop_processes(state)
    shutil.rmtree(directory, ignore_errors=True)


def restart_apiserver(directory: Path = DEFAULT_DIR) -> ClusterState:
    """Stop kube-apiserver and start it again on the same port; etcd keeps the data."""
    state = ClusterState.load(directory.resolve())
    _stop(state.apiserver_pid)
    # The port is normally free again at once; wait briefly in case of TIME_WAIT races.
    state.apiserver_pid = _spawn(state.apiserver_command, Path(state.apiserver_log))
    state.save()
    _wait_apiserver(state)
    return state
