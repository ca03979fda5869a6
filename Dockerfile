# cdfbridge image: `cdfbridge-producer`, `cdfbridge-consumer`, `cdfbridge-verify` or
# `cdfbridge-demo-data`. BASE is any Debian bookworm image with Python 3.11 and its venv
# module; stack/docker/python.Dockerfile makes one where no registry is reachable.
ARG BASE=python:3.11-slim-bookworm

# --- build: the virtualenv and the Spark jars (Delta, spark-avro, S3, Azure) --------------
FROM ${BASE} AS build
# stack/docker/images.sh removes the images of this label that a rebuild leaves untagged.
LABEL io.cdfbridge.image=build
# PEM text of extra CAs to trust while building, for a TLS-intercepting proxy: only this
# stage sees it, and the image keeps nothing of it.
ARG EXTRA_CA_CERT=""
COPY stack/docker/build-prepare.sh /usr/local/bin/
RUN sh /usr/local/bin/build-prepare.sh openjdk-17-jre-headless maven
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/cdfbridge/venv/bin:$PATH
WORKDIR /src
# Dependencies first, in their own layers: code changes reuse them.
COPY pyproject.toml README.md ./
RUN python3 -m venv /opt/cdfbridge/venv \
    && python3 -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt
COPY stack/maven/spark/pom.xml stack/maven/spark/pom.xml
RUN mvn -B -q -f stack/maven/spark/pom.xml dependency:copy-dependencies \
        -Dstack.lib=/opt/cdfbridge/lib/spark \
    && rm -rf /root/.m2
COPY schemas schemas
COPY services services
COPY producer producer
COPY consumer consumer
COPY stack stack
COPY verify verify
RUN pip install --no-deps . && rm -rf /src/build

# --- runtime: a JRE for Spark, the venv and the jars, run as a user of its own ----------
FROM ${BASE} AS runtime
LABEL io.cdfbridge.image=runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /home/cdfbridge --create-home cdfbridge \
    && mkdir -p /data && chown cdfbridge /data
COPY --from=build /opt/cdfbridge /opt/cdfbridge
# CDFBRIDGE_STACK_HOME: where Spark finds the jars above (<home>/lib/spark).
ENV PATH=/opt/cdfbridge/venv/bin:$PATH \
    CDFBRIDGE_STACK_HOME=/opt/cdfbridge \
    PYTHONUNBUFFERED=1
# The Spark driver's class-data archive, built with this image's own JRE and jars: a
# producer's JVM starts faster with it (services/class_archive.py).
RUN cdfbridge-stack fetch cds && rm /opt/cdfbridge/lib/spark.jsa.*.log
WORKDIR /home/cdfbridge
USER cdfbridge
# The producer's /metrics or the consumer's /health answers (services/healthcheck.py).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=6 \
    CMD ["python", "-m", "services.healthcheck"]
# No entrypoint script: the command is the process, so `docker stop`'s SIGTERM reaches
# Python, which drains and commits before it exits.
CMD ["cdfbridge-producer", "--help"]
