"""kpysched: a Kubernetes scheduler in Python on asyncio."""

from importlib.metadata import PackageNotFoundError, version

from kpysched.api import lean_kubernetes

# Before any module of ours imports kubernetes_asyncio: ~35 MiB of generated API and
# model modules the scheduler never uses stay unloaded (see lean_kubernetes).
lean_kubernetes.install()

try:
    __version__ = version("kpysched")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
