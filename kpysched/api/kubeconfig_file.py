"""A client configuration from a kubeconfig file, for the command-line tools (explain,
snapshot, simulate), with one clear error when there is none to read.

kubernetes_asyncio only logs "Config not found" when no file exists and then fails on
the empty document ("Expected key current-context"), which names neither the file nor
the fix."""

from __future__ import annotations

import os
from pathlib import Path

from kubernetes_asyncio import client
from kubernetes_asyncio import config as kube_config


class KubeconfigError(Exception):
    """No usable kubeconfig; the message says which file and why."""


def kubeconfig_paths(explicit: Path | None) -> list[Path]:
    """The files a load would read: the flag's, else $KUBECONFIG's (a list), else
    ~/.kube/config."""
    if explicit is not None:
        return [explicit]
    listed = os.environ.get("KUBECONFIG", "")
    if listed:
        return [Path(p).expanduser() for p in listed.split(os.pathsep) if p]
    return [Path("~/.kube/config").expanduser()]


def require_kubeconfig(explicit: Path | None) -> None:
    """KubeconfigError unless one of the files a load would read exists."""
    paths = kubeconfig_paths(explicit)
    if any(path.is_file() for path in paths):
        return
    shown = ", ".join(str(path) for path in paths)
    if explicit is not None:
        raise KubeconfigError(f"kubeconfig {shown}: no such file")
    where = "$KUBECONFIG names" if os.environ.get("KUBECONFIG") else "the default is"
    raise KubeconfigError(f"no kubeconfig: {where} {shown}, which does not exist; "
                          "give one with --kubeconfig")


async def client_configuration(explicit: Path | None, context: str | None,
                               ) -> client.Configuration:
    """The configuration of `context` (else the current one) of the kubeconfig."""
    require_kubeconfig(explicit)
    configuration = client.Configuration()
    try:
        await kube_config.load_kube_config(
            config_file=str(explicit) if explicit else None, context=context,
            client_configuration=configuration)
    except (kube_config.ConfigException, OSError) as error:
        raise KubeconfigError(f"kubeconfig: {error}") from None
    return configuration
