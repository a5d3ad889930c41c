"""--master replaces the kubeconfig's server, as kube-scheduler's does."""

from __future__ import annotations

from pathlib import Path

import pytest

from kpysched.api.client import make_api_client

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: abc}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
"""


@pytest.mark.parametrize(("master", "host"), [
    pytest.param(None, "https://10.0.0.1:6443", id="kubeconfig-server"),
    pytest.param("https://192.0.2.7:443/", "https://192.0.2.7:443", id="master-overrides"),
])
async def test_master(tmp_path: Path, master: str | None, host: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    async with await make_api_client(path, master) as api_client:
        assert api_client.configuration.host == host
