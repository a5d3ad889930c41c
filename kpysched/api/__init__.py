"""The transport to the API server: nothing here knows about scheduling.

- `client.py`: `make_api_client` (kubeconfig or in-cluster ApiClient) and `RawApi`, the
  raw-JSON request path every write and a few raw reads take, with its token bucket.
- `http11.py`: the kept-alive HTTP/1.1 connection pool RawApi's requests ride on.
- `lean_kubernetes.py`: loads only the parts of kubernetes_asyncio kpysched uses
  (installed by `kpysched/__init__.py` before anything imports it).
- `times.py`: the API's timestamp formats (metav1.Time, metav1.MicroTime).

May import: the standard library, aiohttp, msgspec, kubernetes_asyncio; nothing else of
kpysched. Who may import it: informers/, writes/, leader.py, serving/ and app.py (which
wires the client); the rest reach the API server through what those hand them.
This `__init__` imports nothing, so importing `kpysched.api.lean_kubernetes` loads no
kubernetes_asyncio.
"""
