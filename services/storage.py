"""Where the Delta tables live: one `[storage]` section, read by every tool that opens a table.

The same settings become Hadoop's `fs.s3a.*` for Spark (the producer) and delta-rs storage
options (`cdfbridge-verify`, `cdfbridge-demo-data`), so credentials are given once
(CDFBRIDGE_STORAGE__ENDPOINT, ...). With no keys, both fall back to the default AWS
credential chain: env vars, web identity, the instance profile.
"""

from __future__ import annotations

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.settings import ENV_PREFIX, Section

S3A = "spark.hadoop.fs.s3a."
SIMPLE_CREDENTIALS = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
SESSION_CREDENTIALS = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
# Spark reads s3:// (as Databricks and EMR name tables) through S3A too, so one URI serves
# Spark and delta-rs alike.
S3_SCHEMES = {"spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem"}
# S3A's own retries wait minutes on an endpoint that does not answer; these give up within
# about a minute (15 s is the least connection timeout S3A takes), leaving the restart to a
# supervisor. A server restart of a few seconds is ridden out.
S3A_DEFAULTS = {
    f"{S3A}connection.establish.timeout": "15s",
    f"{S3A}attempts.maximum": "3",
    f"{S3A}retry.limit": "5",
    f"{S3A}retry.interval": "500ms",
}


class StorageSettings(Section):
    """An S3-compatible object store; every field is optional (AWS's defaults apply)."""

    endpoint: str | None = Field(
        default=None, description="e.g. http://127.0.0.1:9300 for MinIO; unset: AWS S3"
    )
    region: str | None = None
    """The bucket's region; unset: AWS's default chain decides."""
    path_style_access: bool = False
    """bucket in the path, not the host name (MinIO, Ceph)"""
    allow_http: bool = False
    """plain HTTP to the endpoint; only for a server on a trusted network"""
    access_key_id: SecretStr | None = None
    """Access key; unset with secret_access_key: AWS's default credential chain (instance
    profile, env, ...)."""
    secret_access_key: SecretStr | None = None
    """Secret key that goes with access_key_id."""
    session_token: SecretStr | None = None
    """Session token of temporary credentials."""

    @model_validator(mode="after")
    def _consistent(self) -> StorageSettings:
        if (self.access_key_id is None) != (self.secret_access_key is None):
            raise ValueError(
                "give both storage.access_key_id and storage.secret_access_key, or neither "
                "(then the default AWS credential chain is used)"
            )
        if self.session_token is not None and self.access_key_id is None:
            raise ValueError("storage.session_token needs access_key_id and secret_access_key")
        if (self.endpoint or "").startswith("http://") and not self.allow_http:
            raise ValueError(
                f"storage.endpoint {self.endpoint} is plain HTTP; set storage.allow_http = true "
                "(CDFBRIDGE_STORAGE__ALLOW_HTTP=true) or use https://"
            )
        return self

    @property
    def region_or_default(self) -> str | None:
        # An S3-compatible server takes any region, but both clients want one to sign with.
        return self.region or ("us-east-1" if self.endpoint else None)

    def spark_conf(self) -> dict[str, str]:
        """`spark.hadoop.fs.s3a.*` settings; holds secrets in clear, never log it."""
        conf = {**S3_SCHEMES, **S3A_DEFAULTS}
        if self.endpoint:
            conf[f"{S3A}endpoint"] = self.endpoint
        if region := self.region_or_default:
            conf[f"{S3A}endpoint.region"] = region
        if self.path_style_access:
            conf[f"{S3A}path.style.access"] = "true"
        if self.allow_http:
            conf[f"{S3A}connection.ssl.enabled"] = "false"
        if self.access_key_id is not None and self.secret_access_key is not None:
            conf[f"{S3A}access.key"] = self.access_key_id.get_secret_value()
            conf[f"{S3A}secret.key"] = self.secret_access_key.get_secret_value()
            conf[f"{S3A}aws.credentials.provider"] = SIMPLE_CREDENTIALS
        if self.session_token is not None:
            conf[f"{S3A}session.token"] = self.session_token.get_secret_value()
            conf[f"{S3A}aws.credentials.provider"] = SESSION_CREDENTIALS
        return conf

    def delta_rs_options(self) -> dict[str, str]:
        """delta-rs (object_store) storage options; holds secrets in clear, never log it."""
        options = {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": self.region_or_default,
            "AWS_ALLOW_HTTP": "true" if self.allow_http else None,
            "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false" if self.path_style_access else None,
            "AWS_ACCESS_KEY_ID": _reveal(self.access_key_id),
            "AWS_SECRET_ACCESS_KEY": _reveal(self.secret_access_key),
            "AWS_SESSION_TOKEN": _reveal(self.session_token),
            # Commits are safe with S3's conditional puts; no lock table needed.
            "conditional_put": "etag",
        }
        return {key: value for key, value in options.items() if value is not None}


def _reveal(secret: SecretStr | None) -> str | None:
    return None if secret is None else secret.get_secret_value()


class StorageOnly(BaseSettings):
    """Just the storage section, for tools that need no other service (cdfbridge-demo-data)."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="ignore", frozen=True
    )

    storage: StorageSettings = Field(default_factory=StorageSettings)
