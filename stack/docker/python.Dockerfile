# A stand-in for python:3.11-slim-bookworm where no image registry is reachable: Debian's
# own Python 3.11 on a base made with debootstrap (stack/docker/images.sh builds both).
ARG BASE=cdfbridge/debian:bookworm
FROM ${BASE}
LABEL io.cdfbridge.image=python
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/* \
    && ln -s /usr/bin/python3 /usr/local/bin/python
CMD ["python3"]
