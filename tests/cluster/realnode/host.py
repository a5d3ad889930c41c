"""The host resources the real node needs, created and removed by name.

Only what `up` created is ever removed: a top-level cgroup of our own in each
hierarchy (never an existing cgroup), one bridge, the mounts under the node's
directory, and the kernel settings kubelet changes, put back as they were.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import subprocess
import time
from pathlib import Path

# What kubelet's container manager sets unless protectKernelDefaults is on.
KUBELET_SYSCTLS = ("vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic",
                   "kernel.panic_on_oops", "kernel.keys.root_maxkeys",
                   "kernel.keys.root_maxbytes")
CONTAINER_LOG_LINKS = Path("/var/log/containers")  # kubelet's fixed symlink directory
# Host directories the node's programs create at fixed paths: the kubelet's log
# links, and containerd's shim sockets (/run/containerd/s, fixed in containerd 2.x
# whatever its state directory). `down` removes those that `up` did not find, once
# empty (another containerd may be using them).
FIXED_HOST_DIRS = (CONTAINER_LOG_LINKS, Path("/run/containerd/s"), Path("/run/containerd"))


class HostError(RuntimeError):
    """The host lacks something the real node needs; the message says what."""


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=30)


def _check(*command: str) -> str:
    result = _run(*command)
    if result.returncode != 0:
        raise HostError(f"`{' '.join(command)}` failed: {result.stderr.strip()}")
    return result.stdout


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal.
    return (field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")
            .replace("\\134", "\\"))


def _mounts() -> list[tuple[str, str]]:
    """(mount point, filesystem type) of every mount this process sees, in order."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        found.append((_unescape(before.split()[4]), after.split()[0]))
    return found


def cgroup_mounts() -> list[Path]:
    """Every cgroup hierarchy's mount point: the v1 controllers and the cgroup2 mount."""
    return [Path(point) for point, kind in _mounts() if kind in {"cgroup", "cgroup2"}]


def preflight() -> None:
    if os.geteuid() != 0:
        raise HostError("the real node needs root (containerd, runc, mounts, cgroups, bridge)")
    if "overlay" not in Path("/proc/filesystems").read_text():
        raise HostError("the kernel has no overlay filesystem (containerd's snapshotter)")
    if not any(kind == "cgroup" for _, kind in _mounts()):
        raise HostError("no cgroup v1 hierarchies are mounted; this harness sets the kubelet "
                        "up for this machine's hybrid layout")


def create_cgroup_root(name: str) -> None:
    """mkdir `name` at the top of every v1 hierarchy (kubelet checks they exist)."""
    for mount in cgroup_mounts():
        if (mount / "cgroup.controllers").exists():
            continue  # the cgroup2 mount: kubelet manages v1 here; runc adds what it needs
        own = mount / name.lstrip("/")
        own.mkdir(exist_ok=True)
        if (mount / "cpuset.cpus").exists():
            # A new v1 cpuset starts with no CPUs and no memory nodes, and nothing can
            # join it; give ours the machine's, as the root has them.
            for knob in ("cpuset.cpus", "cpuset.mems"):
                (own / knob).write_text((mount / knob).read_text())


def _empty_cgroup(directory: Path, timeout: float = 15.0) -> None:
    freezer = directory / "freezer.state"
    if freezer.exists() and freezer.read_text().strip() != "THAWED":
        freezer.write_text("THAWED")  # a frozen process cannot die
    deadline = time.monotonic() + timeout
    while True:
        pids = [int(p) for p in (directory / "cgroup.procs").read_text().split()]
        if not pids:
            return
        if time.monotonic() > deadline:
            raise HostError(f"processes {pids} in {directory} did not exit")
        for pid in pids:  # pod processes started by this node: nothing else is in here
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def remove_cgroup_root(name: str) -> list[str]:
    """Kill what is left in our cgroups and rmdir them, deepest first; return problems."""
    problems = []
    for mount in cgroup_mounts():
        own = mount / name.lstrip("/")
        if not own.is_dir():
            continue
        directories = sorted((p for p in own.rglob("*") if p.is_dir()),
                             key=lambda p: len(p.parts), reverse=True)
        for directory in [*directories, own]:
            try:
                _empty_cgroup(directory)
                directory.rmdir()
            except (OSError, HostError) as error:
                problems.append(f"{directory}: {error}")
    return problems


def _overlapping_routes(subnet: str) -> list[str]:
    network = ipaddress.ip_network(subnet)
    routes = json.loads(_check("ip", "-j", "-4", "route", "show", "table", "all"))
    clashes = []
    for route in routes:
        destination = route.get("dst", "")
        if destination in ("", "default", "broadcast", "local") or ":" in destination:
            continue
        try:
            if ipaddress.ip_network(destination, strict=False).overlaps(network):
                clashes.append(f"{destination} dev {route.get('dev', '?')}")
        except ValueError:
            continue
    return clashes


def create_bridge(name: str, gateway: str, subnet: str) -> None:
    """The pod bridge, holding the gateway address so the host routes to the pods."""
    clashes = _overlapping_routes(subnet)
    if clashes:
        raise HostError(f"pod subnet {subnet} overlaps existing routes: {', '.join(clashes)}")
    prefix = ipaddress.ip_network(subnet).prefixlen
    _check("ip", "link", "add", "name", name, "type", "bridge")
    _check("ip", "addr", "add", f"{gateway}/{prefix}", "dev", name)
    _check("ip", "link", "set", name, "up")


def delete_bridge(name: str) -> list[str]:
    if _run("ip", "link", "show", name).returncode != 0:
        return []
    result = _run("ip", "link", "del", name)
    return [] if result.returncode == 0 else [f"ip link del {name}: {result.stderr.strip()}"]


def unmount_under(root: Path, attempts: int = 5) -> list[str]:
    """Lazily unmount every mount below `root`, deepest first (mounts may be stacked)."""
    prefix = f"{root.resolve()}/"
    for _ in range(attempts):
        points = sorted({p for p, _ in _mounts() if p.startswith(prefix) or p == str(root)},
                        key=len, reverse=True)
        if not points:
            return []
        for point in points:
            _run("umount", "-l", point)
    left = [p for p, _ in _mounts() if p.startswith(prefix)]
    return [f"still mounted: {p}" for p in left]


def _sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def read_sysctls() -> dict[str, str]:
    return {key: _sysctl_path(key).read_text().strip() for key in KUBELET_SYSCTLS
            if _sysctl_path(key).exists()}


def restore_sysctls(saved: dict[str, str]) -> list[str]:
    problems = []
    for key, value in saved.items():
        path = _sysctl_path(key)
        try:
            if path.read_text().strip() != value:
                path.write_text(value)
        except OSError as error:
            problems.append(f"restoring {key}={value}: {error}")
    return problems


def remove_shim_sockets(containerd_state: Path) -> list[str]:
    """Remove the sockets under /run/containerd/s of shims that died without doing so."""
    problems = []
    for bootstrap in containerd_state.glob("io.containerd.runtime.v2.task/*/*/bootstrap.json"):
        try:
            address = json.loads(bootstrap.read_text())["address"]
        except (OSError, ValueError, KeyError) as error:
            problems.append(f"{bootstrap}: {error}")
            continue
        with contextlib.suppress(FileNotFoundError):
            Path(address.removeprefix("unix://")).unlink()
    return problems


def missing_host_dirs() -> list[str]:
    return [str(d) for d in FIXED_HOST_DIRS if not d.exists()]


def remove_host_traces(pod_logs: Path, created_dirs: list[str]) -> None:
    """Drop our links from /var/log/containers and the fixed dirs `up` created, if empty."""
    if CONTAINER_LOG_LINKS.is_dir():
        for link in CONTAINER_LOG_LINKS.iterdir():
            if link.is_symlink() and os.readlink(link).startswith(f"{pod_logs}/"):
                link.unlink()
    for directory in created_dirs:  # listed children before parents
        with contextlib.suppress(FileNotFoundError, OSError):
            Path(directory).rmdir()
