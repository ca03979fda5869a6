#!/usr/bin/env bash
# Makes sure a Docker engine answers and `docker compose` (v2) works, on a Debian/Ubuntu
# machine where neither may be set up: installs docker.io and debootstrap with apt-get,
# starts dockerd by hand when no engine answers (no systemd needed), and builds the compose
# plugin from its Go module when `docker compose` is missing. Idempotent; needs root (or
# sudo) for what it installs or starts. Exits 3 when this machine cannot have an engine.
set -euo pipefail
COMPOSE_VERSION=${COMPOSE_VERSION:-v2.40.3}
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/cdfbridge-dockerd.log}
SUDO=$([ "$(id -u)" -eq 0 ] && echo "" || echo sudo)

need_apt=()
command -v dockerd >/dev/null || need_apt+=(docker.io)
command -v debootstrap >/dev/null || need_apt+=(debootstrap)
if [ ${#need_apt[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null; then
    echo "engine: no dockerd and no apt-get to install one (${need_apt[*]})" >&2
    exit 3
  fi
  echo "engine: installing ${need_apt[*]} with apt-get"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  echo "engine: starting dockerd (log: $DOCKERD_LOG)"
  # No systemd, no iptables: containers talk over user-defined networks (compose makes one)
  # and published ports go through docker-proxy.
  $SUDO mkdir -p /var/lib/docker /run/docker-exec
  $SUDO sh -c "nohup dockerd --data-root /var/lib/docker --exec-root /run/docker-exec \
    --pidfile /run/docker.pid --iptables=false --ip-masq=false --bridge=none \
    >>'$DOCKERD_LOG' 2>&1 &"
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  if ! docker info >/dev/null 2>&1; then
    echo "engine: dockerd did not answer within 60 s; see $DOCKERD_LOG" >&2
    tail -20 "$DOCKERD_LOG" >&2 || true
    exit 3
  fi
fi

if ! docker compose version >/dev/null 2>&1; then
  if ! command -v go >/dev/null; then
    echo "engine: \`docker compose\` is missing and Go is not on PATH to build it;" \
      "install the compose plugin (or Go) and run again" >&2
    exit 3
  fi
  echo "engine: building docker compose $COMPOSE_VERSION from its Go module (minutes, once)"
  # Plain `go install` refuses the module (it has exclude directives): build inside it.
  src=$(go mod download -json "github.com/docker/compose/v2@$COMPOSE_VERSION" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
  plugins="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins"
  mkdir -p "$plugins"
  (cd "$src" && go build -trimpath -o "$plugins/docker-compose" \
    -ldflags "-X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" ./cmd)
fi
echo "engine: ready ($(docker compose version))"
