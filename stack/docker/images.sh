#!/usr/bin/env bash
# Builds every image docker-compose.yml needs on a machine that cannot pull images, for
#   docker compose -f docker-compose.yml -f stack/docker/compose.local.yml up
# 1. a Debian bookworm base with debootstrap, imported as cdfbridge/debian:bookworm;
# 2. a Python 3.11 base on it (stack/docker/python.Dockerfile);
# 3. cdfbridge:local, the project's Dockerfile on that base;
# 4. cdfbridge/stack-services:local, Kafka, the registry and ClickHouse from the same
#    registry packages as the local stack (stack/docker/services.Dockerfile).
# Docker's layer cache makes a second run fast; the images a rebuild replaces are removed.
# EXTRA_CA_CERT (PEM text) is trusted while building, for a TLS-intercepting proxy; by
# default, the CAs this machine added itself.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash stack/docker/engine.sh
SUDO=$([ "$(id -u)" -eq 0 ] && echo "" || echo sudo)
if [ -z "${EXTRA_CA_CERT:-}" ] && compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  EXTRA_CA_CERT=$(cat /usr/local/share/ca-certificates/*.crt)
fi
export EXTRA_CA_CERT

if ! docker image inspect cdfbridge/debian:bookworm >/dev/null 2>&1; then
  echo "images: debootstrap bookworm (about a minute and a half)"
  root=$(mktemp -d)
  $SUDO debootstrap --variant=minbase bookworm "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$root.log" 2>&1 ||
    { tail -20 "$root.log" >&2; exit 1; }
  $SUDO tar -C "$root" -c . | docker import - cdfbridge/debian:bookworm >/dev/null
  $SUDO rm -rf "$root" "$root.log"
fi
log=$(mktemp)
build() {
  docker build --network=host --build-arg EXTRA_CA_CERT "$@" >"$log" 2>&1 ||
    { tail -40 "$log" >&2; echo "images: docker build $* failed" >&2; exit 1; }
}
echo "images: cdfbridge/python:3.11-local"
build -t cdfbridge/python:3.11-local -f stack/docker/python.Dockerfile stack/docker
echo "images: cdfbridge:local"
build -t cdfbridge:local --build-arg BASE=cdfbridge/python:3.11-local .
echo "images: cdfbridge/stack-services:local"
build -t cdfbridge/stack-services:local --build-arg CDFBRIDGE_IMAGE=cdfbridge:local \
  --build-arg BASE=cdfbridge/python:3.11-local \
  -f stack/docker/services.Dockerfile .
rm -f "$log"
# A rebuild leaves the images it replaced (and its build stages) untagged: about 5 GB a code
# change. Remove ours, and only ours, so that repeated builds do not fill the disk.
docker image prune -f --filter label=io.cdfbridge.image >/dev/null
docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep '^cdfbridge' || true
