"""TLS failures, found on the exception's type wherever a client wraps them: a certificate
that no trusted CA signed or that names another host, or a TLS handshake the server refused.
No later attempt gets past those, so they stop the command with an error naming the setting
(exit 2), where a dropped connection would be retried."""

from __future__ import annotations

import ssl

from schemas.errors import ConfigError

# How deep to follow the chain of causes (clickhouse-connect → urllib3 → ssl, httpx → ssl).
DEPTH = 8


class TlsError(ConfigError):
    def __init__(self, service: str, where: str, section: str, failure: ssl.SSLError) -> None:
        detail = (
            failure.verify_message
            if isinstance(failure, ssl.SSLCertVerificationError)
            else failure.reason or type(failure).__name__
        )
        prefix = f"CDFBRIDGE_{section.upper()}__"
        super().__init__(
            f"the TLS connection to {service} at {where} failed ({detail}); check that "
            f"{prefix}SSL_CA_LOCATION names the CA that signed its certificate and that the "
            "address is a name the certificate holds (and that the service speaks TLS there); "
            f"{prefix}TLS_VERIFY=false turns the check off, never for production"
        )


def tls_failure(exc: BaseException) -> ssl.SSLError | None:
    """The ssl.SSLError behind exc, following causes, contexts, urllib3's `reason` and
    exceptions carried in args; None when there is none."""
    seen: list[BaseException] = [exc]
    for _ in range(DEPTH):
        nexts: list[BaseException] = []
        for error in seen:
            if isinstance(error, ssl.SSLError):
                return error
            linked = [error.__cause__, error.__context__, getattr(error, "reason", None)]
            linked += list(error.args)
            nexts += [e for e in linked if isinstance(e, BaseException)]
        if not nexts:
            return None
        seen = nexts
    return None
