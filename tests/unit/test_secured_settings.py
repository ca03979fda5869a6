"""Settings of secured services: TLS options as each client takes them, the registry's
credentials inside the URL ClickHouse gets (and masked when printed), TLS failures found
behind wrapped errors, and the secured stack's own settings."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from pydantic import SecretStr

from services.settings import (
    ClickHouseSettings,
    KafkaSettings,
    SchemaRegistrySettings,
    masked_url,
)
from services.tls_errors import TlsError, tls_failure
from stack.cli import main as stack_main
from stack.credentials import Credentials, htpasswd_line, sha256_hex
from stack.settings import StackSettings

REGISTRY = "https://registry:8443/apis/ccompat/v7"


def test_registry_credentials_go_into_clickhouses_url_percent_encoded() -> None:
    settings = SchemaRegistrySettings(url=REGISTRY, basic_auth_user_info=SecretStr("me:p@ss:w/rd"))
    url = settings.url_for_clickhouse().get_secret_value()
    assert url == "https://me:p%40ss%3Aw%2Frd@registry:8443/apis/ccompat/v7"
    assert masked_url(url) == "https://me:******@registry:8443/apis/ccompat/v7"
    assert "p%40ss" not in str(settings.url_for_clickhouse())


def test_a_url_with_its_own_credentials_or_none_is_kept() -> None:
    given = "https://other:secret@registry/apis/ccompat/v7"
    settings = SchemaRegistrySettings(basic_auth_user_info=SecretStr("me:pw"))
    assert settings.url_for_clickhouse(given).get_secret_value() == given
    assert SchemaRegistrySettings(url=REGISTRY).url_for_clickhouse().get_secret_value() == REGISTRY
    assert masked_url(REGISTRY) == REGISTRY


def test_tls_settings_reach_each_client(caplog: pytest.LogCaptureFixture) -> None:
    assert SchemaRegistrySettings(ssl_ca_location="/ca.pem").client_config()["ssl.ca.location"] == (
        "/ca.pem"
    )
    assert ClickHouseSettings(ssl_ca_location="/ca.pem").tls() == {"ca_cert": "/ca.pem"}
    assert ClickHouseSettings().tls() == {}
    with caplog.at_level("WARNING"):
        off = KafkaSettings(security_protocol="SSL", tls_verify=False).client_config()
        assert SchemaRegistrySettings(tls_verify=False).client_config()["ssl.ca.location"] is False
        assert ClickHouseSettings(tls_verify=False).tls() == {"verify": False}
    assert off["enable.ssl.certificate.verification"] is False
    assert KafkaSettings().client_config().get("enable.ssl.certificate.verification") is None


def test_tls_failures_are_found_behind_wrapping_errors() -> None:
    verify = ssl.SSLCertVerificationError(1, "certificate verify failed")
    verify.verify_message = "Hostname mismatch, certificate is not valid for 'localhost'."

    class PoolError(Exception):
        def __init__(self, reason: BaseException) -> None:
            super().__init__("max retries")
            self.reason = reason

    try:
        try:
            raise PoolError(OSError(verify))
        except PoolError as inner:
            raise RuntimeError("driver failed") from inner
    except RuntimeError as outer:
        found = tls_failure(outer)
    assert found is verify
    message = str(TlsError("ClickHouse", "https://localhost:8443", "clickhouse", verify))
    assert "Hostname mismatch" in message and "CDFBRIDGE_CLICKHOUSE__SSL_CA_LOCATION" in message
    assert tls_failure(RuntimeError("no TLS here")) is None


def test_the_secured_stack_keeps_apart_from_the_plain_one(tmp_path: Path) -> None:
    plain = StackSettings(home=tmp_path)
    secure = StackSettings(home=tmp_path, secure=True, registry_port=9999)
    assert secure.home == tmp_path / "secure" and secure.lib == plain.lib
    assert secure.kafka_port == plain.kafka_port + 100
    assert secure.registry_port == 9999  # set explicitly: kept
    assert secure.clickhouse_url.startswith("https://") and plain.clickhouse_url.startswith("http:")


def test_credentials_are_private_and_hashed_for_the_servers(tmp_path: Path) -> None:
    credentials = Credentials(StackSettings(home=tmp_path, secure=True))
    credentials.ensure()
    password = credentials.password("clickhouse")
    assert len(password) >= 24 and credentials.password("clickhouse") == password
    assert all(p.stat().st_mode & 0o077 == 0 for p in credentials.dir.iterdir())
    assert password not in sha256_hex(password) and len(sha256_hex(password)) == 64
    assert htpasswd_line("u", password).startswith("u:{SSHA}") and password not in htpasswd_line(
        "u", password
    )
    context = ssl.create_default_context(cafile=credentials.ca_path)
    context.load_cert_chain(credentials.cert_path, credentials.key_path)  # a matching pair


def test_env_secure_points_at_the_password_files_without_printing_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CDFBRIDGE_STACK_HOME", str(tmp_path))
    assert stack_main(["env", "--secure"]) == 0
    out = capsys.readouterr().out
    secrets = tmp_path / "secure" / "secrets"
    assert f'CDFBRIDGE_CLICKHOUSE__PASSWORD="$(cat {secrets}/clickhouse.password)"' in out
    assert f'BASIC_AUTH_USER_INFO="cdfbridge:$(cat {secrets}/registry.password)"' in out
    for password in secrets.glob("*.password"):
        assert password.read_text() not in out


def test_the_tls_proxy_alone_is_refused_without_secure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CDFBRIDGE_STACK_HOME", str(tmp_path))
    with pytest.raises(SystemExit) as stopped:
        stack_main(["up", "tls-proxy"])
    assert stopped.value.code == 2
    assert "add --secure" in capsys.readouterr().err
