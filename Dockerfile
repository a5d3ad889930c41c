# kpysched, the scheduler image: docker build -t kpysched:0.1.0 .
#
# The install steps are those of scripts/setup.sh (what .ci/run runs): a virtualenv,
# then `pip install --require-hashes` of the locked files, then kpysched itself with
# --no-deps; here from constraints-image.txt (kpysched's dependencies, pip and the build
# backend: the part of constraints.txt the image needs), without `-e` and without the
# dev extra. tests/unit/test_dockerfile.py keeps the two in step.
#
# The final image is FROM scratch: the venv, the interpreter and its standard library,
# the shared libraries they load, the CA bundle (scripts/image_rootfs.py picks them).
# No shell, no pip, no package manager: nothing for an intruder to run but kpysched.
# The chart's probes are HTTP requests, so nothing needs a shell in the container.
#
# The base is pinned by digest (the multi-arch index of python:3.11.10-slim-bookworm),
# so the same commit builds on the same base tomorrow. To bump it: read the index
# digest of the new tag (`crane digest python:3.11-slim-bookworm` or
# `docker buildx imagetools inspect python:3.11-slim-bookworm`), replace BASE_IMAGE,
# keep the Python minor version in step with constraints.txt, and run the tests.
# A registry-less build passes --build-arg BASE_IMAGE=<a locally built equivalent>.
ARG PYTHON_VERSION=3.11
ARG BASE_IMAGE=python:3.11.10-slim-bookworm@sha256:5148c0e4bbb64271bca1d3322360ebf4bfb7564507ae32dd639322e4952a6b16

FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
RUN python -m venv /opt/kpysched
COPY pyproject.toml README.md LICENSE constraints-image.txt ./
COPY scripts/image_rootfs.py ./scripts/
COPY kpysched ./kpysched
RUN /opt/kpysched/bin/python -m pip install --quiet --require-hashes -r constraints-image.txt \
 && /opt/kpysched/bin/python -m pip install --quiet --no-deps --no-build-isolation . \
 && /opt/kpysched/bin/python -m pip check \
 && /opt/kpysched/bin/python scripts/image_rootfs.py /opt/kpysched /rootfs

FROM scratch
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="kpysched" \
      org.opencontainers.image.description="A Kubernetes scheduler in Python on asyncio, faithful to kube-scheduler" \
      org.opencontainers.image.source="https://github.com/kpysched/kpysched" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
# Bytecode was compiled at install time; nothing is written at run time, so the
# container runs with a read-only root filesystem. C.UTF-8 is built into glibc.
ENV PATH=/opt/kpysched/bin \
    LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /rootfs /
# A numeric non-root user, so runAsNonRoot can verify it without /etc/passwd.
USER 65532:65532
# Proof at build time that the image runs without a shell (exec form: no /bin/sh is
# started) and holds neither a shell nor pip, and that every module kpysched loads at
# start finds its shared libraries.
RUN ["/opt/kpysched/bin/python", "-c", "import importlib.util, os; \
assert not any(os.path.exists(p) for p in ('/bin/sh', '/usr/bin/sh', '/bin/bash')), 'a shell'; \
assert importlib.util.find_spec('pip') is None, 'pip'; \
import kpysched.app, kpysched.cli, uvloop, ssl, ctypes"]
# The secure port: /healthz /livez /readyz /metrics over HTTPS (a self-signed
# certificate unless --tls-cert-file is given), with delegated authentication and
# authorization; plain HTTP only with --insecure-serving, which binds to loopback.
EXPOSE 10259
ENTRYPOINT ["/opt/kpysched/bin/kpysched", "run"]
