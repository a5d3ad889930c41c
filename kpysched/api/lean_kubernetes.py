"""Load only the parts of kubernetes_asyncio kpysched uses.

kpysched takes three things from kubernetes_asyncio: the Configuration, the kubeconfig
and in-cluster loaders, and ApiClient (auth settings, TLS, `call_api` for list and
watch). Importing any of them normally runs `kubernetes_asyncio/__init__.py` and
`client/__init__.py`, which import every generated API class and every model: some
1500 modules and ~35 MiB of resident memory (`import kpysched.app`: 128 MiB with them,
93 without) that the scheduler never touches (its objects are decoded by
kpysched/informers/decode.py, its writes are raw JSON).

`install()` puts three stand-in packages into sys.modules before anything imports
kubernetes_asyncio: the top package, `client` and `client.models`. Each has the real
package's path, so its submodules import as usual, and carries the few names kpysched
reads. Any other name read from a stand-in (say `client.V1Pod`, or a model that
`ApiClient.deserialize` looks up) first runs that package's own `__init__` into the
stand-in, so the package ends up exactly as a normal import would have left it; it
only costs the memory this module saves. If kubernetes_asyncio was imported before
`install()`, nothing is changed.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

_TOP = "kubernetes_asyncio"


def install() -> None:
    if _TOP in sys.modules:
        return
    spec = importlib.util.find_spec(_TOP)
    if spec is None or spec.submodule_search_locations is None:
        return  # not installed: the first real import will say so
    top_dir = Path(next(iter(spec.submodule_search_locations)))
    top = _stand_in(_TOP, top_dir)
    client = _stand_in(f"{_TOP}.client", top_dir / "client")
    # A parent package holds its subpackages as attributes, as an import would set them.
    vars(top)["client"] = client
    vars(client)["models"] = _stand_in(f"{_TOP}.client.models", top_dir / "client" / "models")
    # The names kpysched and kubernetes_asyncio.config read from `client`, from the
    # modules that define them (these imports need no package __init__).
    configuration = importlib.import_module(f"{_TOP}.client.configuration")
    exceptions = importlib.import_module(f"{_TOP}.client.exceptions")
    importlib.import_module(f"{_TOP}.client.rest")  # before api_client, which reads it
    api_client = importlib.import_module(f"{_TOP}.client.api_client")
    vars(client).update(Configuration=configuration.Configuration,
                        ApiClient=api_client.ApiClient, ApiException=exceptions.ApiException)
    # `client.rest` and `client.exceptions` are bound by their imports; `config` is
    # a real package whose own imports need nothing more than the names above.
    importlib.import_module(f"{_TOP}.config")


def _stand_in(name: str, directory: Path) -> types.ModuleType:
    init = directory / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(directory)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    completed = False

    def complete_on_first_miss(attribute: str) -> Any:
        nonlocal completed
        # Dunder probes (doctest's __test__, copy's __deepcopy__...) are not names the
        # package defines; `import *` asks for __all__, which it does.
        if completed or (attribute.startswith("__") and attribute != "__all__"):
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        completed = True
        loader.exec_module(module)  # the package's own __init__, into this module
        return getattr(module, attribute)

    module.__getattr__ = complete_on_first_miss  # type: ignore[method-assign]
    sys.modules[name] = module
    return module
