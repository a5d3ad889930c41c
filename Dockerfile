# kpysched, the scheduler image: docker build -t kpysched:0.1.0 .
#
# The install steps are those of scripts/setup.sh (what .ci/run runs): a virtualenv,
# pip upgraded in it, then `pip install` of the package with the versions locked in
# constraints.txt; here without `-e` and without the dev extra.
# tests/unit/test_dockerfile.py keeps the two in step.
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
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY kpysched ./kpysched
RUN /opt/kpysched/bin/python -m pip install --quiet -c constraints.txt --upgrade pip \
 && /opt/kpysched/bin/python -m pip install --quiet -c constraints.txt .

FROM ${BASE_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="kpysched" \
      org.opencontainers.image.description="A Kubernetes scheduler in Python on asyncio, faithful to kube-scheduler" \
      org.opencontainers.image.source="https://github.com/kpysched/kpysched" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
# Bytecode was compiled at install time; nothing is written at run time, so the
# container runs with a read-only root filesystem.
ENV PATH=/opt/kpysched/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/kpysched /opt/kpysched
# A numeric non-root user, so runAsNonRoot can verify it without /etc/passwd.
USER 65532:65532
# /healthz /livez /readyz /metrics (plain HTTP unless --tls-cert-file is given).
EXPOSE 10259
ENTRYPOINT ["/opt/kpysched/bin/kpysched", "run"]
