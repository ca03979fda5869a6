# cdfbridge image: `cdfbridge-producer`, `cdfbridge-consumer` or `cdfbridge-verify`.
FROM python:3.11-slim-bookworm

# Spark needs a JRE; Maven collects the Delta and spark-avro jars at build time only.
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless maven \
    && rm -rf /var/lib/apt/lists/*

ENV CDFBRIDGE_STACK_HOME=/opt/cdfbridge \
    PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY schemas schemas
COPY producer producer
COPY consumer consumer
COPY stack stack
COPY verify verify
RUN pip install --no-cache-dir . \
    && python -m stack fetch spark \
    && apt-get purge -y maven && apt-get autoremove -y \
    && rm -rf /root/.m2

# The Delta volume is created from /data, so it belongs to the user the services run as.
RUN mkdir -p /data && chown nobody /data
USER nobody
