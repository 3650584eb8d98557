"""What the Google Cloud destinations (``gcp-cloud-pubsub``, ``gcp-cloud-operations``,
``gcp-cloud-storage``, ``gcp-cloud-monitoring``) share: the ``credentials_json`` the platform's Terraform provider
sends (a service account key file, as Google's console downloads it), and an access
token for it.

The token is obtained as Google's libraries do for a service account
(https://developers.google.com/identity/protocols/oauth2/service-account): a JWT signed
RS256 with the key's ``private_key`` (header ``kid``: ``private_key_id``), claims
``iss`` (``client_email``), ``scope``, ``aud`` (the key's ``token_uri``), ``iat`` and
``exp`` (an hour later), ``POST``ed to ``token_uri`` as
``application/x-www-form-urlencoded`` ``assertion=<jwt>&grant_type=urn:ietf:params:oauth:
grant-type:jwt-bearer``; the answer's ``access_token`` is sent as ``Authorization:
Bearer`` until 225 s before its ``expires_in`` runs out (google-auth's margin), then a
new one is fetched. The token request goes through the node's sender: the destination
guard (``token_uri``'s host is checked on save too), retries with backoff on 5xx, a
refusal (Google's 400 ``invalid_grant``) failing the delivery at once.

**Decisions:** ``credentials_json`` is stored and read back as sent (the provider reads
it back). On save it must be a JSON object; a key whose ``type`` is given and is not
``service_account`` (a user's refresh token, workload identity federation) is refused,
as is a ``private_key`` that is not an RSA private key in PEM, one over 4,096 bits
(Google's keys are 2,048), and a ``token_uri`` that is not an http(s) URL. An object
without ``client_email`` and ``private_key`` (the provider's own tests send ``{}``) is
accepted and fails each delivery, logged.

The key is read without OpenSSL's consistency check of an RSA key (its primality tests
of ``p`` and ``q``): that check costs 26 ms of CPU for a 2,048-bit key, 190 ms for
4,096 and 2.9 s for 8,192 here, in the request that saves the destination, on the
event loop every tenant shares. A key that is not consistent signs an assertion the
token endpoint refuses: the delivery fails, as for a revoked key. The assertion is
signed in a thread, once an hour a node.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated, Any, Final
from urllib.parse import urlencode, urlsplit

import jwt
import orjson
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, HttpUrl

from tidegate.clock import now_ms
from tidegate.components.destinations.http_sender import OutboundSender
from tidegate.components.destinations.outbound import Authorize
from tidegate.components.destinations.wire import WireRequest, check_header
from tidegate.delivery import DeliveryFailed

__all__ = [
    "DEFAULT_TOKEN_URI",
    "GRANT_TYPE",
    "MAX_KEY_BITS",
    "REFRESH_MARGIN_S",
    "Credentials",
    "ProjectId",
    "ResourceLabel",
    "ResourceLabels",
    "ServiceAccount",
    "ServiceAccountToken",
    "assertion",
    "authorizer",
    "monitored_resource",
    "private_key",
    "service_account",
    "token_uri",
    "token_urls",
]

DEFAULT_TOKEN_URI: Final = "https://oauth2.googleapis.com/token"
GRANT_TYPE: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
LIFETIME_S: Final = 3600
REFRESH_MARGIN_S: Final = 225
_MAX_CREDENTIALS: Final = 16_384
MAX_KEY_BITS: Final = 4096


def _info(text: str) -> dict[str, Any]:
    try:
        info = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise ValueError("credentials_json must be a service account key (JSON)") from None
    if not isinstance(info, dict):
        raise ValueError("credentials_json must be a JSON object")
    return info


def private_key(pem: str) -> RSAPrivateKey:
    """The key of ``pem``, read without the RSA consistency check (above); ValueError
    when it is not an RSA private key of at most ``MAX_KEY_BITS``."""
    try:
        loaded = load_pem_private_key(
            pem.encode(), password=None, unsafe_skip_rsa_key_validation=True
        )
    except (ValueError, TypeError, UnicodeEncodeError):
        loaded = None
    if not isinstance(loaded, RSAPrivateKey):
        raise ValueError("private_key must be an RSA private key in PEM")
    if loaded.key_size > MAX_KEY_BITS:
        raise ValueError(f"private_key must be an RSA key of at most {MAX_KEY_BITS} bits")
    return loaded


def _checked(text: str) -> str:
    info = _info(text)
    kind = info.get("type")
    if kind is not None and kind != "service_account":
        raise ValueError(
            f"credentials of type {kind!r} are not supported: use a service account key"
        )
    key = info.get("private_key")
    if key is not None:
        private_key(str(key))
    uri = info.get("token_uri")
    if uri is not None:
        parts = urlsplit(str(uri))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("token_uri must be an http(s) URL")
    return text


Credentials = Annotated[
    str, Field(min_length=1, max_length=_MAX_CREDENTIALS), AfterValidator(_checked)
]
"""``credentials_json``: a service account key file's text."""


# Google's project ids (also the legacy ``domain:project``): safe in a URL path as they are.
ProjectId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[a-z0-9.:-]+$")]
_TEXT: Final = r"^[^\x00-\x1f\x7f]+$"


class ResourceLabel(BaseModel):
    """One of the provider's ``resource_labels`` (its map, sent as a list)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label_name: Annotated[str, Field(min_length=1, max_length=256, pattern=_TEXT)]
    label_value: Annotated[str, Field(min_length=1, max_length=1024, pattern=_TEXT)]


def _distinct(labels: list[ResourceLabel]) -> list[ResourceLabel]:
    names = [label.label_name for label in labels]
    if len(set(names)) != len(names):
        raise ValueError("a resource label is given twice")
    return labels


ResourceLabels = Annotated[list[ResourceLabel], Field(max_length=64), AfterValidator(_distinct)]
ResourceType = Annotated[str, Field(min_length=1, max_length=256, pattern=_TEXT)]


def monitored_resource(type_: str, labels: list[ResourceLabel] | None) -> dict[str, Any]:
    """A monitored resource: ``{"type", "labels": {name: value}}``."""
    return {
        "type": type_,
        "labels": {label.label_name: label.label_value for label in labels or ()},
    }


def token_uri(credentials_json: str) -> str:
    uri = _info(credentials_json).get("token_uri")
    return uri if isinstance(uri, str) and uri else DEFAULT_TOKEN_URI


def token_urls(credentials_json: str) -> list[tuple[str, HttpUrl]]:
    """The key's own token endpoint, for the destination guard's check on save (Google's
    default one is public)."""
    uri = token_uri(credentials_json)
    return [] if uri == DEFAULT_TOKEN_URI else [("/credentials_json", HttpUrl(uri))]


@dataclass(frozen=True, slots=True)
class ServiceAccount:
    email: str
    private_key: str
    key_id: str
    token_uri: str


def service_account(credentials_json: str) -> ServiceAccount:
    """The key's parts a token needs; ``DeliveryFailed`` when it lacks them."""
    info = _info(credentials_json)
    email, key = info.get("client_email"), info.get("private_key")
    if not isinstance(email, str) or not email or not isinstance(key, str) or not key:
        raise DeliveryFailed(
            "credentials_json is not a service account key (no client_email or private_key)"
        )
    key_id = info.get("private_key_id")
    return ServiceAccount(
        email, key, key_id if isinstance(key_id, str) else "", token_uri(credentials_json)
    )


def assertion(account: ServiceAccount, scope: str, now_s: int) -> str:
    """The signed JWT exchanged for a token; ``DeliveryFailed`` when the key is not one
    (a key saved before the checks above)."""
    try:
        key = private_key(account.private_key)
    except ValueError as error:
        raise DeliveryFailed(f"credentials_json: {error}") from None
    claims = {
        "iss": account.email,
        "scope": scope,
        "aud": account.token_uri,
        "iat": now_s,
        "exp": now_s + LIFETIME_S,
    }
    headers = {"kid": account.key_id} if account.key_id else None
    return jwt.encode(claims, key, algorithm="RS256", headers=headers)


class ServiceAccountToken:
    """A node's access token: fetched on the first delivery, refreshed when due, one
    fetch at a time."""

    def __init__(self, credentials_json: str, scope: str, sender: OutboundSender) -> None:
        self._credentials = credentials_json
        self._scope = scope
        self._sender = sender
        self._lock = asyncio.Lock()
        self._token = ""
        self._due = 0.0

    async def __call__(self, deadline: float) -> tuple[tuple[str, str], ...]:
        loop = asyncio.get_running_loop()
        if not self._token or loop.time() >= self._due:
            async with self._lock:
                if not self._token or loop.time() >= self._due:
                    await self._fetch(deadline)
        return (("Authorization", f"Bearer {self._token}"),)

    async def _fetch(self, deadline: float) -> None:
        account = service_account(self._credentials)
        signed = await asyncio.to_thread(assertion, account, self._scope, now_ms() // 1000)
        body = urlencode({"assertion": signed, "grant_type": GRANT_TYPE}).encode()
        headers = (("Content-Type", "application/x-www-form-urlencoded"),)
        asked = asyncio.get_running_loop().time()
        head = await self._sender.send_request(
            WireRequest("POST", account.token_uri, headers, body), deadline=deadline
        )
        try:
            answer = orjson.loads(head)
        except orjson.JSONDecodeError:
            answer = None
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token:
            raise DeliveryFailed(f"{self._sender.name}: the token endpoint sent no access_token")
        try:
            check_header("Authorization", f"Bearer {token}")
        except ValueError:
            raise DeliveryFailed(
                f"{self._sender.name}: the access token is not a header value"
            ) from None
        lifetime = answer.get("expires_in") if isinstance(answer, dict) else None
        if isinstance(lifetime, bool) or not isinstance(lifetime, int | float) or lifetime <= 0:
            lifetime = LIFETIME_S
        self._token = token
        self._due = asked + max(0.0, float(lifetime) - REFRESH_MARGIN_S)


def authorizer(scope: str) -> Any:
    """The ``authorizer`` of a destination whose configuration has ``credentials_json``."""

    def make(config: Any, sender: OutboundSender) -> Authorize:
        return ServiceAccountToken(config.credentials_json, scope, sender)

    return make
