# syntax=docker/dockerfile:1
# Build stage: turn the source into a wheel, and the wheel plus its dependencies into a venv.
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONSAFEPATH=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY api ./api
COPY operator ./operator
COPY devcluster ./devcluster
COPY client ./client
COPY cli ./cli
COPY convert ./convert
RUN python -m venv /opt/kubetrain \
 && /opt/kubetrain/bin/pip install --upgrade pip setuptools \
 && /opt/kubetrain/bin/pip install .

# Runtime stage: the venv only, run as a non-root user with no shell tools needed.
FROM python:3.11-slim
ENV PATH=/opt/kubetrain/bin:$PATH PYTHONSAFEPATH=1 PYTHONUNBUFFERED=1
COPY --from=build /opt/kubetrain /opt/kubetrain
USER 65532:65532
ENTRYPOINT ["kubetrain-operator"]
