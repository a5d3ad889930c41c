"""The transport to the API server: nothing here knows about scheduling.

- `client.py`: `make_api_client` (kubeconfig or in-cluster ApiClient) and `RawApi`, the
  raw-JSON request path every write and a few raw reads take, with its token bucket.
- `http11.py`: the kept-alive HTTP/1.1 connection pool RawApi's requests ride on.
- `lean_kubernetes.py`: loads only the parts of kubernetes_asyncio kpysched uses
  (installed by `kpysched/__init__.py` before anything imports it).
- `response.py`: `ApiResponse` and `ApiRequester`, the shape of a client (data).
- `times.py`: the API's timestamp formats, metav1.Time and metav1.MicroTime (data).

May import: the standard library, aiohttp, msgspec, kubernetes_asyncio; nothing else of
kpysched. Who may import the transport (client, http11, lean_kubernetes): informers/,
writes/, leader.py, serving/, and the wiring and client tools (app.py, cli.py,
explain/, simulate/); the import contract in pyproject holds this. response.py and
times.py are data anyone may use: the framework names the handle's client as an
ApiRequester, plugins read ApiResponses. This `__init__` imports nothing, so importing
`kpysched.api.lean_kubernetes` loads no kubernetes_asyncio.
"""
