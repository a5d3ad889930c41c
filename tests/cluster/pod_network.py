"""What a real cluster runs around its nodes and the harness does not, for workloads
installed in-cluster on the real node (`python -m tests.cluster.pod_network --dir DIR`
runs it in the foreground; tests/e2e/test_in_cluster.py as a fixture).

kube-scheduler places the pods that name no scheduler (kpysched's own, from the chart).
Pods reach kube-apiserver the way in-cluster clients do anywhere: through the
`kubernetes` Service's ClusterIP, read from KUBERNETES_SERVICE_HOST/PORT.

The harness's kube-apiserver listens on loopback only, its endpoint reconciler is off
(it would publish 127.0.0.1, which Endpoints validation rejects), and nothing routes
Service IPs. Three real pieces close the gap, all undone by `stop()`:

- a TCP relay on the node bridge's gateway address (the one host address pods reach),
  same port as kube-apiserver, to 127.0.0.1. TLS passes through untouched: clients
  dial 10.0.0.1, which the serving certificate names. Binding kube-apiserver itself to
  0.0.0.0 would also expose it on the VM's outside interfaces; the relay stays on the
  private bridge;
- the `kubernetes` EndpointSlice pointing at that relay, as the reconciler would write
  it for an API server advertised on the gateway;
- kube-proxy of the same release (iptables mode) for the node, which DNATs
  10.0.0.1:443 to that endpoint. Told to leave host sysctls alone (conntrack limits,
  route_localnet) and cleaned up with `kube-proxy --cleanup`.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import subprocess
import sys
import threading
import time
import urllib.error
from dataclasses import dataclass
from pathlib import Path

from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import build, kube
from tests.cluster.gates import feature_gates_args
from tests.cluster.processes import ClusterError, alive, free_port, http_get, log_tail, spawn
from tests.cluster.processes import stop as stop_process
from tests.cluster.realnode.layout import NODE_NAME, NodeLayout
from tests.cluster.state import ClusterState

CHUNK = 65536
KUBE_PROXY_READY_SECONDS = 60.0


class Relay:
    """Forwards TCP from (listen_host, port) to (127.0.0.1, port) on a thread of its own."""

    def __init__(self, listen_host: str, port: int) -> None:
        self.listen_host, self.port = listen_host, port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="apiserver relay", daemon=True)
        self._started = threading.Event()
        self._error: OSError | None = None
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._accept, self.listen_host, self.port))
        except OSError as error:
            self._error = error
            self._started.set()
            return
        self._started.set()
        self._loop.run_forever()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer),
                             return_exceptions=True)

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(CHUNK):
                sink.write(data)
                await sink.drain()
        finally:
            sink.close()

    def start(self) -> None:
        self._thread.start()
        self._started.wait(10)
        if self._error is not None:
            raise ClusterError(f"relay cannot listen on {self.listen_host}:{self.port}: "
                               f"{self._error}")

    def stop(self) -> None:
        async def shutdown() -> None:
            # Closing both ends lets every pipe see EOF and finish: cancelling the
            # connection tasks instead would make asyncio log each as an error.
            if self._server is not None:
                self._server.close()
            for writer in self._writers:
                writer.close()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if others:
                await asyncio.wait(others, timeout=5)

        if self._loop.is_running():
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


def endpoint_slice(address: str, port: int) -> dict[str, object]:
    """The `kubernetes` Service's EndpointSlice, as kube-apiserver's reconciler writes it."""
    return {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "kubernetes",
                                "endpointslice.kubernetes.io/managed-by":
                                    "kpysched-test-harness"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }


async def publish_endpoint(api: client.ApiClient, address: str, port: int) -> None:
    discovery = client.DiscoveryV1Api(api)
    body = endpoint_slice(address, port)
    try:
        await discovery.create_namespaced_endpoint_slice("default", body)
    except ApiException as error:
        if error.status != 409:
            raise
        await discovery.replace_namespaced_endpoint_slice("kubernetes", "default", body)


async def withdraw_endpoint(api: client.ApiClient) -> None:
    try:
        await client.DiscoveryV1Api(api).delete_namespaced_endpoint_slice("kubernetes",
                                                                          "default")
    except ApiException as error:
        if error.status != 404:
            raise


@dataclass(slots=True)
class PodNetwork:
    """What `start` made: the relay and the kube-proxy process (with its log)."""

    relay: Relay
    kube_proxy_pid: int
    kube_proxy_log: Path
    kube_scheduler_pid: int


def _kube_proxy_command(state: ClusterState, layout: NodeLayout, healthz_port: int,
                        metrics_port: int) -> list[str]:
    return [
        str(build.binary_path("kube-proxy")),
        f"--kubeconfig={state.kubeconfig}",
        f"--hostname-override={NODE_NAME}",
        "--proxy-mode=iptables",
        f"--cluster-cidr={layout.pod_subnet}",
        f"--healthz-bind-address=127.0.0.1:{healthz_port}",
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        # Leave the host's kernel settings as they are (0 = do not touch): conntrack
        # table size and timeouts, and route_localnet (only for NodePorts on 127.0.0.1).
        "--conntrack-max-per-core=0",
        "--conntrack-tcp-timeout-established=0",
        "--conntrack-tcp-timeout-close-wait=0",
        "--iptables-localhost-nodeports=false",
        # NodePorts, if any Service had one, only on the bridge address.
        f"--nodeport-addresses={layout.gateway}/32",
        "--v=2",
    ]


def _start_kube_scheduler(state: ClusterState) -> int:
    """The default scheduler, without leader election (the only one), on loopback, with
    the control plane's feature gates."""
    log = Path(state.dir) / "kube-scheduler.log"
    return spawn([str(build.binary_path("kube-scheduler", state.release)),
                  f"--kubeconfig={state.kubeconfig}",
                  f"--authentication-kubeconfig={state.kubeconfig}",
                  f"--authorization-kubeconfig={state.kubeconfig}", "--leader-elect=false",
                  "--bind-address=127.0.0.1", f"--secure-port={free_port()}",
                  *feature_gates_args(state.feature_gates)], log)


async def start(state: ClusterState, api: client.ApiClient) -> PodNetwork:
    """Make the `kubernetes` Service reachable from the real node's pods."""
    layout = NodeLayout.for_cluster(Path(state.dir))
    relay = Relay(layout.gateway, state.apiserver_port)
    relay.start()
    log = Path(state.dir) / "kube-proxy.log"
    try:
        await publish_endpoint(api, layout.gateway, state.apiserver_port)
        healthz_port = free_port()
        pid = spawn(_kube_proxy_command(state, layout, healthz_port, free_port()), log)
        network = PodNetwork(relay, pid, log, _start_kube_scheduler(state))
        deadline = time.monotonic() + KUBE_PROXY_READY_SECONDS
        url = f"http://127.0.0.1:{healthz_port}/healthz"
        while True:
            if not alive(pid):
                # Its kube-scheduler would outlive the test otherwise.
                stop_process(network.kube_scheduler_pid)
                raise ClusterError(f"kube-proxy exited during start-up:\n{log_tail(log)}")
            try:
                http_get(url)
                return network
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                stop_process(pid)
                stop_process(network.kube_scheduler_pid)
                raise ClusterError(f"kube-proxy not healthy on {url} within "
                                   f"{KUBE_PROXY_READY_SECONDS:.0f}s:\n{log_tail(log)}")
            await asyncio.sleep(0.5)
    except BaseException:
        relay.stop()
        await withdraw_endpoint(api)
        raise


async def stop(network: PodNetwork, api: client.ApiClient) -> list[str]:
    """Undo `start`; return what could not be undone."""
    problems: list[str] = []
    stop_process(network.kube_scheduler_pid)
    stop_process(network.kube_proxy_pid)
    cleanup = subprocess.run([str(build.binary_path("kube-proxy")), "--cleanup"],
                             capture_output=True, text=True, timeout=60)
    if cleanup.returncode != 0:
        problems.append(f"kube-proxy --cleanup exited {cleanup.returncode}: "
                        f"{cleanup.stderr[-2000:]}")
    network.relay.stop()
    await withdraw_endpoint(api)
    return problems


async def _serve(directory: Path) -> list[str]:
    state = ClusterState.load(directory.resolve())
    async with kube.api_client(state) as api:
        network = await start(state, api)
        print(f"kube-scheduler, kube-proxy and the `kubernetes` Service endpoint "
              f"{network.relay.listen_host}:{network.relay.port} are up; Ctrl-C stops them",
              flush=True)
        stopped = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stopped.set)
        await stopped.wait()
        return await stop(network, api)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.pod_network",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path(".cluster"))
    problems = asyncio.run(_serve(parser.parse_args(argv).dir))
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
