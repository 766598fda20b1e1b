"""SASL and TLS settings of the Kafka sink: TiCDC's parameters, validated, mapped to librdkafka properties.

TiCDC's rules (``pkg/sink/kafka/options.go``): SASL is on only when ``sasl-mechanism`` is set (``plain``,
``scram-sha-256``, ``scram-sha-512``, ``gssapi``, ``oauthbearer``, any case); ``ca``, ``cert`` and ``key`` go
together; giving them turns TLS on unless ``enable-tls=false``, which is then an error; ``insecure-skip-verify``
only counts with TLS on; OAuth settings (``sasl-oauth-*``, TOML only) need ``sasl-mechanism=oauthbearer``, a
client id, a base64 client secret and a token URL.

Where sparkcdc is stricter, because librdkafka (the client we use) would fail later or silently differ:
``sasl-user``/``sasl-password`` without a mechanism, PLAIN/SCRAM without both, GSSAPI ``user`` (password)
authentication and a Kerberos config path (librdkafka kinits from a keytab and reads ``KRB5_CONFIG`` from the
environment), and an OAuth audience or grant type other than ``client_credentials`` are refused with a line
saying what to do. Passwords, the OAuth secret and the TLS key path are masked in ``repr``, as TiCDC masks them.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, Final

from sparkcdc.errors import ConfigError
from sparkcdc.masking import MASK, mask_uri
from sparkcdc.sink_options import ERR_KAFKA_CONFIG, Setting, Sources, as_bool, as_choice, as_str, as_strings
from sparkcdc.tls_files import TlsFileError, check_tls_files

KAFKA_TABLE: Final = "[sink.kafka-config]"
SASL_MECHANISMS: Final = {
    "plain": "PLAIN",
    "scram-sha-256": "SCRAM-SHA-256",
    "scram-sha-512": "SCRAM-SHA-512",
    "gssapi": "GSSAPI",
    "oauthbearer": "OAUTHBEARER",
}


@dataclass(frozen=True, repr=False)
class SaslConfig:
    """SASL settings; ``mechanism`` is TiCDC's upper-case name, ``""`` when SASL is off."""

    mechanism: str = ""
    user: str = ""
    password: str = ""
    gssapi_auth_type: str = ""
    gssapi_keytab_path: str = ""
    gssapi_service_name: str = ""
    gssapi_user: str = ""
    gssapi_password: str = ""
    gssapi_realm: str = ""
    gssapi_disable_pafxfast: bool = False
    oauth_client_id: str = ""
    oauth_client_secret: str = ""
    oauth_token_url: str = ""
    oauth_scopes: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return bool(self.mechanism)

    def librdkafka(self) -> dict[str, Any]:
        """librdkafka ``sasl.*`` properties (``security.protocol`` is set by the caller)."""
        if not self.mechanism:
            return {}
        out: dict[str, Any] = {"sasl.mechanism": self.mechanism}
        if self.mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            out["sasl.username"] = self.user
            out["sasl.password"] = self.password
        elif self.mechanism == "GSSAPI":
            out["sasl.kerberos.service.name"] = self.gssapi_service_name or "kafka"
            principal = self.gssapi_user + (f"@{self.gssapi_realm}" if self.gssapi_realm else "")
            if principal:
                out["sasl.kerberos.principal"] = principal
            out["sasl.kerberos.keytab"] = self.gssapi_keytab_path
        else:
            out["sasl.oauthbearer.method"] = "oidc"
            out["sasl.oauthbearer.client.id"] = self.oauth_client_id
            out["sasl.oauthbearer.client.secret"] = self.oauth_client_secret
            out["sasl.oauthbearer.token.endpoint.url"] = self.oauth_token_url
            if self.oauth_scopes:
                out["sasl.oauthbearer.scope"] = " ".join(self.oauth_scopes)
        return out

    def __repr__(self) -> str:
        if not self.mechanism:
            return "SaslConfig(off)"
        shown = {
            "mechanism": self.mechanism,
            "user": self.user or self.gssapi_user or self.oauth_client_id,
            "password": MASK if (self.password or self.gssapi_password or self.oauth_client_secret) else "",
        }
        if self.oauth_token_url:
            shown["token_url"] = mask_uri(self.oauth_token_url)
        return "SaslConfig(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"

    __str__ = __repr__


@dataclass(frozen=True, repr=False)
class TlsConfig:
    """TLS settings: ``ca``/``cert``/``key`` are file paths (all or none)."""

    enabled: bool = False
    ca: str = ""
    cert: str = ""
    key: str = ""
    insecure_skip_verify: bool = False

    def librdkafka(self) -> dict[str, Any]:
        if not self.enabled:
            return {}
        out: dict[str, Any] = {}
        if self.ca:
            out.update(
                {"ssl.ca.location": self.ca, "ssl.certificate.location": self.cert, "ssl.key.location": self.key}
            )
        if self.insecure_skip_verify:
            out["enable.ssl.certificate.verification"] = False
            out["ssl.endpoint.identification.algorithm"] = "none"
        return out

    def __repr__(self) -> str:
        key = MASK if self.key else ""
        return (
            f"TlsConfig(enabled={self.enabled}, ca={self.ca!r}, cert={self.cert!r}, key={key!r}, "
            f"insecure_skip_verify={self.insecure_skip_verify})"
        )

    __str__ = __repr__


def security_protocol(sasl: SaslConfig, tls: TlsConfig) -> str:
    """librdkafka's ``security.protocol`` for the combination."""
    if sasl.enabled:
        return "SASL_SSL" if tls.enabled else "SASL_PLAINTEXT"
    return "SSL" if tls.enabled else "PLAINTEXT"


def _fail(message: str) -> ConfigError:
    return ConfigError(message, code=ERR_KAFKA_CONFIG)


def parse_sasl(src: Sources) -> SaslConfig:
    """SASL settings from the URI and ``[sink.kafka-config]``; raises ConfigError naming the problem."""

    def text(key: str) -> str:
        return as_str(src.pick(key, KAFKA_TABLE), "")

    mechanism_setting = src.pick("sasl-mechanism", KAFKA_TABLE)
    mechanism = ""
    if mechanism_setting is not None and mechanism_setting.value != "":
        word = as_choice(mechanism_setting, "", tuple(SASL_MECHANISMS))
        mechanism = SASL_MECHANISMS[word]
    values: dict[str, Any] = {"mechanism": mechanism, "user": text("sasl-user"), "password": text("sasl-password")}
    for key in ("keytab-path", "service-name", "user", "password", "realm"):
        values[f"gssapi_{key.replace('-', '_')}"] = text(f"sasl-gssapi-{key}")
    auth = src.pick("sasl-gssapi-auth-type", KAFKA_TABLE)
    values["gssapi_auth_type"] = "" if auth is None or auth.value == "" else as_choice(auth, "", ("user", "keytab"))
    values["gssapi_disable_pafxfast"] = as_bool(src.pick("sasl-gssapi-disable-pafxfast", KAFKA_TABLE), False)
    values.update(_parse_oauth(src))
    sasl = SaslConfig(**values)
    _check_sasl(sasl, src)
    return sasl


def _parse_oauth(src: Sources) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, attr in (("sasl-oauth-client-id", "oauth_client_id"), ("sasl-oauth-token-url", "oauth_token_url")):
        setting = src.toml(KAFKA_TABLE, key)
        if setting is not None:
            value = as_str(setting, "")
            if not value:
                raise setting.fail("cannot be empty")
            out[attr] = value
    secret = src.toml(KAFKA_TABLE, "sasl-oauth-client-secret")
    if secret is not None:
        value = as_str(secret, "")
        if not value:
            raise secret.fail("cannot be empty")
        try:
            out["oauth_client_secret"] = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise secret.fail("OAuth2 client secret is not base64 encoded; give it base64-encoded") from None
    out["oauth_scopes"] = as_strings(src.toml(KAFKA_TABLE, "sasl-oauth-scopes"))
    grant = src.toml(KAFKA_TABLE, "sasl-oauth-grant-type")
    if grant is not None and as_str(grant, "") not in ("", "client_credentials"):
        raise grant.fail("the Kafka client supports only client_credentials")
    audience = src.toml(KAFKA_TABLE, "sasl-oauth-audience")
    if audience is not None and as_str(audience, ""):
        raise audience.fail("an OAuth audience cannot be passed to the Kafka client (librdkafka); remove it")
    return out


def _check_sasl(sasl: SaslConfig, src: Sources) -> None:
    oauth = bool(sasl.oauth_client_id or sasl.oauth_client_secret or sasl.oauth_token_url)
    if oauth and sasl.mechanism != "OAUTHBEARER":
        raise _fail(
            f"OAuth2 is only supported with SASL mechanism type OAUTHBEARER, but got {sasl.mechanism or 'none'}; "
            "set sasl-mechanism=oauthbearer"
        )
    if not sasl.mechanism:
        if sasl.user or sasl.password:
            raise _fail("sasl-user/sasl-password are given without sasl-mechanism; add sasl-mechanism=plain, "
                        "scram-sha-256 or scram-sha-512")  # fmt: skip
        return
    if sasl.mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") and not (sasl.user and sasl.password):
        raise _fail(f"sasl-mechanism {sasl.mechanism} needs both sasl-user and sasl-password")
    if sasl.mechanism == "GSSAPI":
        if sasl.gssapi_auth_type != "keytab":
            raise _fail(
                "sasl-mechanism gssapi needs sasl-gssapi-auth-type=keytab and sasl-gssapi-keytab-path "
                "(the Kafka client, librdkafka, authenticates from a keytab; password authentication is not supported)"
            )
        if not sasl.gssapi_keytab_path:
            raise _fail("sasl-gssapi-auth-type=keytab needs sasl-gssapi-keytab-path")
        path = src.pick("sasl-gssapi-kerberos-config-path", KAFKA_TABLE)
        if path is not None and as_str(path, ""):
            raise path.fail("librdkafka reads the Kerberos config from KRB5_CONFIG; set it in cdc server's environment")
    if sasl.mechanism == "OAUTHBEARER":
        for attr, key in (
            ("oauth_client_id", "sasl-oauth-client-id"),
            ("oauth_client_secret", "sasl-oauth-client-secret"),
            ("oauth_token_url", "sasl-oauth-token-url"),
        ):
            if not getattr(sasl, attr):
                raise _fail(f"sasl-mechanism oauthbearer needs {key} in {KAFKA_TABLE}")


def parse_tls(src: Sources) -> TlsConfig:
    """TLS settings from the URI and ``[sink.kafka-config]`` with TiCDC's rules."""
    ca, cert, key = (as_str(src.pick(k, KAFKA_TABLE), "") for k in ("ca", "cert", "key"))
    given = [k for k, v in (("ca", ca), ("cert", cert), ("key", key)) if v]
    if given and len(given) != 3:
        raise _fail(f"ca, cert and key files should all be supplied (got only {', '.join(given)})")
    enable: Setting | None = src.pick("enable-tls", KAFKA_TABLE)
    if enable is not None:
        enabled = as_bool(enable, False)
        if given and not enabled:
            raise _fail("credential files are supplied, but 'enable-tls' is set to false; remove one of them")
    else:
        enabled = bool(given)
    insecure = as_bool(src.pick("insecure-skip-verify", KAFKA_TABLE), False)
    try:  # TiCDC loads them when it builds the producer's config, so a bad file is refused at create
        check_tls_files(ca, cert, key)
    except TlsFileError as e:
        raise src.pick(e.which, KAFKA_TABLE).fail(e.reason) from None  # type: ignore[union-attr]
    return TlsConfig(enabled, ca, cert, key, insecure and enabled)
