"""Certificates and keys for the loopback test cluster, made with the openssl CLI.

The certificates are made afresh for every cluster; their RSA keys are not. Making the
seven 2048-bit keys a cluster needs took 1 to 30 s of a cluster's start (openssl's
prime search, slower the busier the machine), and a CI run starts ~30 clusters. Each
key is made once into the harness's cache (KEYS_DIR) and copied into every cluster's
pki directory: clusters share keys, never certificates, CAs' serials or tokens, and
nothing here relies on a key being unique to one cluster.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path

from tests.cluster import build

# The Service IP of `kubernetes.default` is the first address of the service range.
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
KUBERNETES_SERVICE_IP = "10.0.0.1"


def _openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")


def keys_dir() -> Path:
    """Where the cached keys live (beside the binaries: KPYSCHED_CACHE moves both)."""
    return build.cache_root().parents[1] / "test-keys"


def _key(pki: Path, name: str) -> None:
    """`pki/<name>.key`: the cached RSA key of that name, made first if missing."""
    cached = keys_dir() / f"{name}.key"
    if not cached.is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        # Made beside it and moved: a process copying it never sees half a key, and two
        # making it at once each move a whole one (either is as good).
        partial = cached.with_name(f".{name}.{secrets.token_hex(4)}.partial")
        _openssl("genrsa", "-out", str(partial), "2048", cwd=cached.parent)
        os.chmod(partial, 0o600)
        partial.replace(cached)
    shutil.copyfile(cached, pki / f"{name}.key")
    os.chmod(pki / f"{name}.key", 0o600)


def generate(pki: Path) -> None:
    """Write ca.{crt,key}, apiserver.{crt,key} (serving) and sa.{key,pub} into `pki`."""
    pki.mkdir(parents=True, exist_ok=True)
    _key(pki, "ca")
    _openssl(
        "req", "-x509", "-new", "-nodes", "-key", "ca.key", "-subj", "/CN=kpysched-test-ca",
        "-days", "3650", "-out", "ca.crt", cwd=pki,
    )
    _key(pki, "apiserver")
    _openssl(
        "req", "-new", "-key", "apiserver.key", "-subj", "/CN=kube-apiserver",
        "-out", "apiserver.csr", cwd=pki,
    )
    names = [
        "DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default", "DNS:kubernetes.default.svc",
        "DNS:kubernetes.default.svc.cluster.local", "IP:127.0.0.1", f"IP:{KUBERNETES_SERVICE_IP}",
    ]
    (pki / "apiserver.ext").write_text(
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
        f"extendedKeyUsage=serverAuth\nsubjectAltName={','.join(names)}\n"
    )
    _openssl(
        "x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "3650", "-extfile", "apiserver.ext", "-out", "apiserver.crt",
        cwd=pki,
    )
    _key(pki, "sa")
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)
    # The API server's identity towards kubelets (logs, exec, port-forward on the real
    # node), in system:masters as kubeadm's apiserver-kubelet-client once was: the
    # kubelet authorizes it with a SubjectAccessReview.
    client_certificate(pki, KUBELET_CLIENT, "kube-apiserver-kubelet-client",
                       ("system:masters",))
    front_proxy(pki)


KUBELET_CLIENT = "apiserver-kubelet-client"
# The aggregation layer, as kubeadm sets it up: a CA of its own (front-proxy-ca), whose
# client certificate the API server presents when it proxies to an aggregated API and
# which extension API servers (kpysched's decisions API) trust for X-Remote-* headers.
FRONT_PROXY_CA = "front-proxy-ca"
FRONT_PROXY_CLIENT = "front-proxy-client"


def front_proxy(pki: Path) -> None:
    """Write front-proxy-ca.{crt,key} and front-proxy-client.{crt,key} into `pki`."""
    _key(pki, FRONT_PROXY_CA)
    _openssl("req", "-x509", "-new", "-nodes", "-key", f"{FRONT_PROXY_CA}.key", "-subj",
             "/CN=kpysched-test-front-proxy-ca", "-days", "3650", "-out",
             f"{FRONT_PROXY_CA}.crt", cwd=pki)
    client_certificate(pki, FRONT_PROXY_CLIENT, FRONT_PROXY_CLIENT, ca=FRONT_PROXY_CA)


def client_certificate(pki: Path, name: str, user: str,
                       groups: tuple[str, ...] = (), ca: str = "ca") -> tuple[Path, Path]:
    """Sign a client certificate for `user` (CN) in `groups` (O) with the cluster CA.

    The API server maps CN to the user name and O to groups, so a component can
    run as its own identity (e.g. system:kube-controller-manager, which the
    bootstrap RBAC policy already binds) instead of as the admin.
    """
    subject = "".join(f"/O={group}" for group in groups) + f"/CN={user}"
    key, csr, cert, ext = (f"{name}.key", f"{name}.csr", f"{name}.crt", f"{name}.ext")
    _key(pki, name)
    _openssl("req", "-new", "-key", key, "-subj", subject, "-out", csr, cwd=pki)
    (pki / ext).write_text(
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=clientAuth\n"
    )
    _openssl("x509", "-req", "-in", csr, "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial",
             "-days", "3650", "-extfile", ext, "-out", cert, cwd=pki)
    return pki / cert, pki / key
