"""The node's container images, written as OCI image-layout archives.

No registry is reachable, so each image is one static binary in a one-layer image,
packed here byte for byte (deterministic: fixed mtimes, gzip without a timestamp)
and imported into containerd with `ctr images import`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.cluster.realnode import build

# The kubelet's default sandbox image name; containerd's config points at it too.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
HELLO_IMAGE = "kpysched.local/hello:test"
HELLO_PORT = 8080

_MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
_MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
_MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
_PLATFORM = {"architecture": "amd64", "os": "linux"}  # the programs are built for this VM


@dataclass(frozen=True, slots=True)
class Image:
    name: str
    program: str  # a build.PROGRAMS name, placed at /<program> in the image
    user: str
    env: tuple[str, ...] = ()
    exposed_ports: tuple[int, ...] = ()

    @property
    def archive(self) -> Path:
        return build.module_cache_dir("images") / f"{self.program}.tar"


IMAGES: tuple[Image, ...] = (
    # 65535 is the user upstream's pause image runs as: it needs no privilege.
    Image(PAUSE_IMAGE, "pause", "65535:65535"),
    Image(HELLO_IMAGE, "hello", "65532:65532", (f"PORT={HELLO_PORT}",), (HELLO_PORT,)),
)


def _descriptor(media_type: str, blob: bytes, **extra: Any) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": f"sha256:{hashlib.sha256(blob).hexdigest()}",
            "size": len(blob), **extra}


def _layer(program: Path) -> bytes:
    """An uncompressed tar holding the program at /<name> and the usual empty dirs."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory in ("etc", "tmp"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if directory == "tmp" else 0o755
            tar.addfile(info)
        data = program.read_bytes()
        info = tarfile.TarInfo(program.name)
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def write_archive(image: Image, program: Path, destination: Path) -> None:
    layer_tar = _layer(program)
    layer = gzip.compress(layer_tar, mtime=0)
    config: dict[str, Any] = {
        **_PLATFORM,
        "config": {"Entrypoint": [f"/{program.name}"], "User": image.user,
                   "Env": list(image.env),
                   "ExposedPorts": {f"{p}/tcp": {} for p in image.exposed_ports}},
        "rootfs": {"type": "layers",
                   "diff_ids": [f"sha256:{hashlib.sha256(layer_tar).hexdigest()}"]},
    }
    config_blob = _json(config)
    manifest_blob = _json({
        "schemaVersion": 2,
        "mediaType": _MEDIA_MANIFEST,
        "config": _descriptor(_MEDIA_CONFIG, config_blob),
        "layers": [_descriptor(_MEDIA_LAYER, layer)],
    })
    tag = image.name.rsplit(":", 1)[1]
    index_blob = _json({
        "schemaVersion": 2,
        "manifests": [_descriptor(_MEDIA_MANIFEST, manifest_blob, platform=_PLATFORM, annotations={
            # containerd's importer names the image from this annotation; the OCI
            # one alone carries only the tag.
            "io.containerd.image.name": image.name,
            "org.opencontainers.image.ref.name": tag,
        })],
    })
    files = {"oci-layout": _json({"imageLayoutVersion": "1.0.0"}), "index.json": index_blob}
    for blob in (layer, config_blob, manifest_blob):
        files[f"blobs/sha256/{hashlib.sha256(blob).hexdigest()}"] = blob
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_suffix(".partial")
    with tarfile.open(partial, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    partial.replace(destination)


def ensure_archives() -> None:
    for image in IMAGES:
        if not image.archive.is_file():
            write_archive(image, build.program_path(image.program), image.archive)
