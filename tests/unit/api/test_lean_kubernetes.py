"""kpysched loads only the kubernetes_asyncio modules it uses, and every other name
still resolves as after a normal import.

Each check runs in a fresh interpreter: which modules an import loads is decided once
per process, and the test process itself has long imported kubernetes_asyncio.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path


def _run(code: str) -> dict[str, object]:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_the_scheduler_loads_no_generated_api_or_model_module() -> None:
    found = _run("""
        import json, sys
        import kpysched.app, kpysched.api.client, kpysched.leader, kpysched.informers
        from kubernetes_asyncio import client
        loaded = [m for m in sys.modules if m.startswith("kubernetes_asyncio")]
        print(json.dumps({
            "apis": [m for m in loaded if ".client.api." in m],
            "models": [m for m in loaded if ".client.models." in m],
            "configuration": client.Configuration.__module__,
            "api_client": client.ApiClient.__module__,
        }))
    """)
    assert found == {"apis": [], "models": [],
                     "configuration": "kubernetes_asyncio.client.configuration",
                     "api_client": "kubernetes_asyncio.client.api_client"}


def test_a_kubeconfig_loads_on_the_lean_packages(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:6443",
                                              "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }))
    found = _run(f"""
        import asyncio, json, sys
        from pathlib import Path
        from kpysched.api.client import make_api_client

        async def main():
            api = await make_api_client(Path({str(kubeconfig)!r}))
            try:
                return api.configuration.host, api.configuration.api_key
            finally:
                await api.close()

        host, key = asyncio.run(main())
        print(json.dumps({{"host": host, "key": key,
                          "models": any(".client.models." in m for m in sys.modules)}}))
    """)
    assert found == {"host": "https://127.0.0.1:6443",
                     "key": {"BearerToken": "Bearer t0ken"}, "models": False}


def test_any_other_name_completes_the_package_as_a_normal_import_would() -> None:
    found = _run("""
        import asyncio, json
        import kpysched
        import kubernetes_asyncio
        from kubernetes_asyncio import client, watch

        async def decoded_pod():
            async with client.ApiClient() as api:
                return api._ApiClient__deserialize(
                    {"metadata": {"name": "p"},
                     "spec": {"nodeName": "n", "containers": [{"name": "c"}]}}, "V1Pod")

        pod = asyncio.run(decoded_pod())
        print(json.dumps({
            "pod": [type(pod).__name__, pod.metadata.name, pod.spec.node_name],
            "core": client.CoreV1Api.__name__,
            "watch": watch.Watch.__name__,
            "version": kubernetes_asyncio.__version__,
            "missing": not hasattr(client, "NoSuchThing"),
        }))
    """)
    assert found == {"pod": ["V1Pod", "p", "n"], "core": "CoreV1Api", "watch": "Watch",
                     "version": found["version"], "missing": True}
    assert isinstance(found["version"], str) and found["version"]


def test_nothing_changes_when_kubernetes_asyncio_was_imported_first() -> None:
    found = _run("""
        import json, sys
        import kubernetes_asyncio.client
        before = {m: id(sys.modules[m]) for m in sys.modules if m.startswith("kubernetes_asyncio")}
        from kpysched.api import lean_kubernetes
        lean_kubernetes.install()
        after = {m: id(sys.modules[m]) for m in sys.modules if m.startswith("kubernetes_asyncio")}
        print(json.dumps({"same": before == after,
                          "models": "kubernetes_asyncio.client.models.v1_pod" in sys.modules}))
    """)
    assert found == {"same": True, "models": True}
