"""The kubelet's credentials, signed by the cluster CA with the openssl CLI.

A client cert for `system:node:<name>` in group `system:nodes` is what the API
server's Node authorizer and NodeRestriction admission expect from a kubelet; the
serving cert lets the API server verify the kubelet when it calls it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path


def _openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")


def _signed(pki: Path, ca_dir: Path, name: str, subject: str, extensions: str) -> None:
    _openssl("genrsa", "-out", f"{name}.key", "2048", cwd=pki)
    _openssl("req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr",
             cwd=pki)
    (pki / f"{name}.ext").write_text(extensions)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", str(ca_dir / "ca.crt"),
             "-CAkey", str(ca_dir / "ca.key"), "-CAcreateserial", "-days", "3650",
             "-extfile", f"{name}.ext", "-out", f"{name}.crt", cwd=pki)


def generate(pki: Path, cluster_pki: Path, node_name: str, node_ip: str) -> None:
    """Write ca.crt, kubelet-client.{crt,key} and kubelet.{crt,key} into `pki`."""
    pki.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cluster_pki / "ca.crt", pki / "ca.crt")
    _signed(pki, cluster_pki, "kubelet-client", f"/O=system:nodes/CN=system:node:{node_name}",
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
            "extendedKeyUsage=clientAuth\n")
    _signed(pki, cluster_pki, "kubelet", f"/CN={node_name}",
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
            f"extendedKeyUsage=serverAuth\nsubjectAltName=DNS:{node_name},IP:{node_ip}\n")


def write_kubeconfig(path: Path, server: str, pki: Path) -> None:
    # JSON is valid YAML, so the kubelet reads it like any kubeconfig.
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kpysched-test", "cluster": {
            "server": server, "certificate-authority": str(pki / "ca.crt")}}],
        "users": [{"name": "kubelet", "user": {
            "client-certificate": str(pki / "kubelet-client.crt"),
            "client-key": str(pki / "kubelet-client.key")}}],
        "contexts": [{"name": "kubelet", "context": {"cluster": "kpysched-test",
                                                      "user": "kubelet"}}],
        "current-context": "kubelet",
    }
    path.write_text(json.dumps(config, indent=2))
