"""Kubeconfig files for the harness's users: the admin (token) and components (certs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write(path: Path, *, server: str, ca_file: str, user: str, token: str | None = None,
          cert: Path | None = None, key: Path | None = None) -> Path:
    """Write a one-context kubeconfig authenticating with a token or a client certificate."""
    credentials: dict[str, Any] = {}
    if token is not None:
        credentials["token"] = token
    if cert is not None and key is not None:
        credentials["client-certificate"] = str(cert)
        credentials["client-key"] = str(key)
    if not credentials:
        raise ValueError(f"kubeconfig for {user}: give a token or a certificate and key")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kpysched-test", "cluster": {
            "server": server, "certificate-authority": ca_file}}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": "kpysched-test", "context": {
            "cluster": "kpysched-test", "user": user}}],
        "current-context": "kpysched-test",
    }
    # JSON is valid YAML, so every kubeconfig reader accepts it.
    path.write_text(json.dumps(config, indent=2))
    return path
