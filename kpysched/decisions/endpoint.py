"""Where the leader serves its decisions, and how `kpysched explain` finds it.

The leader serves GET /debug/decisions/<namespace>/<pod> (with --enable-decision-endpoint)
and, while it holds the Lease, writes where on the Lease's annotations: its serving
address, and in a cluster its pod (so a client outside the pod network goes through the
API server's pod proxy instead)."""

from __future__ import annotations

from typing import Final

PATH_PREFIX: Final = "/debug/decisions"
# scheme://host:port of the leader's HTTP server.
ADDRESS_ANNOTATION: Final = "kpysched.io/serving-address"
# namespace/name of the leader's pod (absent outside a cluster).
POD_ANNOTATION: Final = "kpysched.io/pod"


def path(namespace: str, name: str) -> str:
    return f"{PATH_PREFIX}/{namespace}/{name}"


def lease_annotations(url: str = "", pod_namespace: str = "",
                      pod_name: str = "") -> dict[str, str]:
    """Both annotations, empty (to be removed: a previous leader's) when not served."""
    pod = f"{pod_namespace}/{pod_name}" if url and pod_namespace and pod_name else ""
    return {ADDRESS_ANNOTATION: url, POD_ANNOTATION: pod}


def advertised_url(scheme: str, bind_address: str, port: int, pod_ip: str = "") -> str:
    """The address others reach this replica at: its pod IP in a cluster, else the bind
    address (loopback when it binds every address)."""
    host = pod_ip or bind_address
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"
