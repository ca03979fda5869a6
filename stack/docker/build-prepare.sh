#!/bin/sh
# A build stage's first step: trust EXTRA_CA_CERT (PEM text of one or more CAs, for a
# TLS-intercepting proxy) and install the Debian packages named as arguments.
# Build stages only: the images keep nothing of them.
set -eu
if [ -n "${EXTRA_CA_CERT:-}" ]; then
    mkdir -p /usr/local/share/ca-certificates
    # One file per certificate: Java's keystore takes only the first of a file.
    printf '%s\n' "${EXTRA_CA_CERT}" | awk '/BEGIN CERTIFICATE/ { n++ }
        n { print > ("/usr/local/share/ca-certificates/build-extra-" n ".crt") }'
fi
apt-get update
apt-get install -y --no-install-recommends ca-certificates "$@"
update-ca-certificates --fresh >/dev/null
rm -rf /var/lib/apt/lists/*
