"""A CA of the extender's own and a serving certificate for 127.0.0.1 it signs, made
with the openssl CLI: the schedulers are given the CA file (tlsConfig.caFile)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.extender.server import Tls


def _openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")


def make(directory: Path) -> tuple[Tls, Path]:
    """(the serving certificate and key, the CA file) in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
             "-subj", "/CN=test-extender-ca", "-days", "365", "-out", "ca.crt", cwd=directory)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key",
             "-subj", "/CN=test-extender", "-out", "server.csr", cwd=directory)
    (directory / "server.ext").write_text(
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "365", "-extfile", "server.ext",
             "-out", "server.crt", cwd=directory)
    return Tls(str(directory / "server.crt"), str(directory / "server.key")), directory / "ca.crt"
