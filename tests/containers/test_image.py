"""What the built images hold: no trace of the build's extra CA, and no root user."""

from __future__ import annotations

import subprocess

import pytest

pytestmark = pytest.mark.containers

IMAGES = ("cdfbridge:local", "cdfbridge/stack-services:local")


def docker(*args: str) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, check=True)
    return done.stdout


@pytest.mark.parametrize("image", IMAGES)
def test_the_image_keeps_nothing_of_the_ca_trusted_while_building(images: None, image: str) -> None:
    history = docker("history", "--no-trunc", "--format", "{{.CreatedBy}}", image)
    assert "BEGIN CERTIFICATE" not in history
    assert "EXTRA_CA_CERT" not in history
    found = docker("run", "--rm", image, "sh", "-c", "ls /usr/local/share/ca-certificates; true")
    assert "build-extra" not in found
    trusted = docker("run", "--rm", image, "sh", "-c", "ls /etc/ssl/certs 2>/dev/null; true")
    assert "build-extra" not in trusted


@pytest.mark.parametrize("image", IMAGES)
def test_the_image_runs_as_a_user_of_its_own(images: None, image: str) -> None:
    assert docker("run", "--rm", image, "id", "-un").strip() == "cdfbridge"
