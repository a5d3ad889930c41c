# kpysched, the scheduler image: docker build -t kpysched:0.1.0 .
#
# The install steps are those of scripts/setup.sh (what .ci/run runs): a virtualenv,
# pip upgraded in it, then `pip install` of the package; here without `-e` and without
# the dev extra. tests/unit/test_dockerfile.py keeps the two in step.
ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
RUN python -m venv /opt/kpysched
COPY pyproject.toml README.md ./
COPY kpysched ./kpysched
RUN /opt/kpysched/bin/python -m pip install --quiet --upgrade pip \
 && /opt/kpysched/bin/python -m pip install --quiet .

FROM python:${PYTHON_VERSION}-slim-bookworm
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
