"""Errors of the local stack."""

from schemas.errors import ConfigError, ServiceUnavailableError


class StackSetupError(ConfigError):
    """A tool or download that the stack needs is missing or failed."""


class ServiceStartError(ServiceUnavailableError):
    """A service process exited or did not become ready in time."""
