"""kpysched's container image for the real node: built by scripts/build-image.sh,
imported into the node's containerd.

`python -m tests.cluster.kpysched_image build|import [--dir DIR]`. The build is the
script (mmdebstrap base, `buildah bud -f Dockerfile`, OCI archive); this module only
finds its output and hands it to the node's containerd, where the kubelet finds it
without a registry (pods use imagePullPolicy Never or IfNotPresent).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.cluster import build as cluster_build
from tests.cluster import cluster
from tests.cluster.realnode import node as real_node
from tests.cluster.realnode.layout import NodeLayout

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "scripts" / "build-image.sh"
VERSION: str = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
REPOSITORY = "localhost/kpysched"  # the name deploy/ and the chart's tests use
IMAGE = f"{REPOSITORY}:{VERSION}"


def archive_path() -> Path:
    """Where build-image.sh writes the OCI archive (same cache root as the binaries)."""
    return cluster_build.cache_root().parents[1] / "images" / f"kpysched-{VERSION}.oci.tar"


def build() -> Path:
    """Run build-image.sh (a few minutes cold: Debian base, then pip from PyPI)."""
    result = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True)
    if result.returncode != 0:
        raise cluster.ClusterError(
            f"scripts/build-image.sh failed (exit {result.returncode}):\n"
            f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return archive_path()


def import_into_node(cluster_dir: Path, archive: Path | None = None) -> None:
    """`ctr images import` into the real node's containerd, then check the name."""
    archive = archive or archive_path()
    if not archive.is_file():
        raise cluster.ClusterError(f"{archive} does not exist: run scripts/build-image.sh")
    layout = NodeLayout.for_cluster(cluster_dir.resolve())
    if not layout.containerd_socket.exists():
        raise cluster.ClusterError(f"no real node in {cluster_dir} (`up --with-node` first)")
    real_node.ctr(layout, "images", "import", "--snapshotter", "overlayfs", str(archive),
                  timeout=300)
    listed = real_node.ctr(layout, "images", "list", "--quiet").split()
    if IMAGE not in listed:
        raise cluster.ClusterError(f"{IMAGE} not in the node's containerd after import "
                                   f"(have {listed})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.kpysched_image")
    parser.add_argument("command", choices=("build", "import"))
    parser.add_argument("--dir", type=Path, default=cluster.DEFAULT_DIR)
    parser.add_argument("archive", nargs="?", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(build())
        else:
            import_into_node(args.dir, args.archive)
            print(f"{IMAGE} imported into the node of {args.dir}")
    except cluster.ClusterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
