#!/usr/bin/env bash
# Installs what cdfbridge needs on a fresh Debian/Ubuntu machine, idempotently: a JDK 17+
# for Spark, Maven, nginx and Chromium with its driver (apt), the Python environment (PyPI),
# the services' jars (Maven Central), the S3 test server (MinIO, built with Go: minutes the
# first time), the Azure Storage emulator (Azurite, npm) and the docs' Mermaid (npm).
# CDFBRIDGE_FETCH names fewer (e.g. "kafka registry spark"). Later runs reuse pip's,
# Maven's, Go's and npm's caches.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}

need_apt=()
java_major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1 || true)
if [ -z "${java_major}" ] || [ "${java_major}" -lt 17 ]; then need_apt+=(openjdk-17-jdk-headless); fi
command -v mvn >/dev/null || need_apt+=(maven)
# The secured stack's TLS proxy (cdfbridge-stack up --secure).
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need_apt+=(nginx-light)
# The docs site's browser test (tests/docs): headless Chromium and its WebDriver.
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
[ -x /usr/bin/chromedriver ] || need_apt+=(chromium-driver)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "bootstrap: installing ${need_apt[*]} with apt-get"
  SUDO=$([ "$(id -u)" -eq 0 ] && echo "" || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "cdfbridge needs Python 3.11+"'
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
stamp="$VENV/.cdfbridge-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "bootstrap: installing Python packages into $VENV"
  "$VENV/bin/pip" install -q -e ".[dev]"
  touch "$stamp"
fi

# shellcheck disable=SC2086 # a list of names
"$VENV/bin/cdfbridge-stack" fetch ${CDFBRIDGE_FETCH:-}
echo "bootstrap: ready"
