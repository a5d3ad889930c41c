"""Stage the files the kpysched image runs from into a directory, for a FROM scratch stage.

Run by the Dockerfile's build stage with the venv's interpreter:

    /opt/kpysched/bin/python scripts/image_rootfs.py /opt/kpysched /rootfs

What is staged: the venv (without pip, setuptools or any console script but kpysched's),
the interpreter the venv points at, its standard library (without ensurepip's bundled
pip wheel, tests, tkinter, idlelib), every shared library those and the venv's extension
modules load (found with ldd, the dynamic loader included), the CA bundle and an empty
/tmp. Nothing else: no shell, no coreutils, no package manager, no pip. Paths are kept
as they are in the base image (symlinked directories such as /lib64 -> usr/lib64
included), so the venv's `bin/python` symlink and every library's path resolve as they
did there. Works for python:3.11-slim (Python in /usr/local) and for Debian's python3
(in /usr), the base scripts/build-image.sh makes.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path

# Left out of the standard library: pip's wheel (the image has no pip) and what only
# a developer or a GUI uses.
_STDLIB_LEFT_OUT = {"ensurepip", "test", "idlelib", "tkinter", "turtledemo", "lib2to3",
                    "site-packages", "dist-packages", "__pycache__"}
# The static library and Makefile extensions are built with (python:slim keeps them).
_STDLIB_LEFT_OUT_PREFIX = "config-"
_VENV_LEFT_OUT = ("pip", "setuptools", "pkg_resources", "_distutils_hack",
                  "distutils-precedence.pth")
_CA_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt",)


def main(venv: Path, rootfs: Path) -> None:
    rootfs.mkdir(parents=True, exist_ok=True)
    stager = _Stager(rootfs)
    interpreter = venv / "bin" / "python"
    stager.copy(interpreter)  # the symlink chain down to the base's interpreter
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    stdlib_entries = [e for e in sorted(stdlib.iterdir()) if e.name not in _STDLIB_LEFT_OUT
                      and not e.name.startswith(_STDLIB_LEFT_OUT_PREFIX)]
    venv_entries = [e for e in sorted(venv.iterdir()) if e.name != "lib"]
    for site in sorted(venv.glob("lib/python*/site-packages")):
        venv_entries += [e for e in sorted(site.iterdir())
                         if not e.name.startswith(_VENV_LEFT_OUT)]
    for entry in stdlib_entries + venv_entries:
        stager.copy(entry)
    for script in sorted((rootfs / venv.relative_to("/") / "bin").iterdir()):
        # pip's scripts and the venv's activation scripts (shell) name what is gone.
        if script.name.startswith(("pip", "easy_install", "activate", "Activate")):
            script.unlink()
    elves = [Path(os.path.realpath(interpreter))]
    for entry in stdlib_entries + venv_entries:
        if entry.is_dir() and not entry.is_symlink():
            elves += [p for p in sorted(entry.rglob("*.so*")) if p.is_file()]
        elif ".so" in entry.name:
            elves.append(entry)
    for library in _shared_libraries(elves):
        stager.copy(library)
    for bundle in _CA_BUNDLES:
        if os.path.exists(bundle):
            stager.copy(Path(bundle))
    tmp = rootfs / "tmp"
    tmp.mkdir(exist_ok=True)
    tmp.chmod(0o1777)


def _shared_libraries(elves: list[Path]) -> set[Path]:
    """Every library `ldd` resolves for these files (the loader included)."""
    found: set[Path] = set()
    for elf in elves:
        result = subprocess.run(["ldd", str(elf)], capture_output=True, text=True)
        if result.returncode != 0:
            continue  # not a dynamic ELF file (ldd says so on stderr)
        for line in result.stdout.splitlines():
            words = line.split()
            if "not found" in line:
                raise SystemExit(f"{elf}: {line.strip()}")
            # "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" or
            # "/lib64/ld-linux-x86-64.so.2 (0x...)"
            path = words[2] if "=>" in words and len(words) > 2 else words[0]
            if path.startswith("/"):
                found.add(Path(path))
    return found


class _Stager:
    def __init__(self, rootfs: Path) -> None:
        self.rootfs = rootfs
        self._done: set[Path] = set()

    def copy(self, path: Path) -> None:
        """Copy `path` to the same place under the root: a file, a directory whole, or a
        symlink as a symlink (with the file it names, or the directory it names made)."""
        path = Path(os.path.abspath(path))
        if path in self._done:
            return
        self._done.add(path)
        # Written under the parent's real path: a symlinked directory of the base is
        # recreated as that symlink, never followed out of the root.
        target = self.rootfs / self._ensure_dir(path.parent).relative_to("/") / path.name
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            self._link(path, target)
        elif stat.S_ISDIR(mode):
            target.mkdir(exist_ok=True)
            shutil.copystat(path, target)
            for entry in sorted(path.iterdir()):
                self.copy(entry)
        else:
            shutil.copy2(path, target)

    def _link(self, path: Path, target: Path) -> None:
        link = os.readlink(path)
        if not target.is_symlink():
            target.symlink_to(link)
        named = path.parent / link
        if os.path.isdir(named):
            self._ensure_dir(named)  # a directory symlink: only what is copied into it
        else:
            self.copy(named)

    def _ensure_dir(self, path: Path) -> Path:
        """Make directory `path` under the root as it is in the base (a symlinked one,
        such as bookworm's /lib -> usr/lib, as that symlink); its real path."""
        current = Path("/")
        for part in Path(os.path.abspath(path)).relative_to("/").parts:
            current = current / part
            target = self.rootfs / current.relative_to("/")
            if current.is_symlink():
                if current not in self._done:
                    self._done.add(current)
                    self._link(current, target)
                current = Path(os.path.realpath(current))
            elif not target.exists():
                target.mkdir()
                shutil.copystat(current, target)
        return current


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
