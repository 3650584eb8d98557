"""The ``webhook`` source: events POSTed to its gateway route by a sender that signs
them (WebSub style).

Option: ``signing_key`` (16 to 512 characters), the key "used for the HMAC signature
to verify the sender". **Optional**: the platform's Terraform provider writes the
source with no ``user_config`` at all; without a key the source is guarded like the
``http`` source (the route's access key, and its signing keys when it has some). With
one, every request must carry ``X-Hub-Signature: <method>=<hex>``:
the HMAC of the **raw request body** (as sent, before any ``Content-Encoding`` is
undone) under the signing key, ``method`` one of ``sha1``, ``sha256``, ``sha384``,
``sha512``; compared in constant time. A missing or wrong signature is a 401 and
nothing is processed. The body is then decoded as the ``http`` source's ``auto``
decoding (``decoding`` may be set as for ``http``).

Signing keys of the gateway route (``PUT /v3/pipeline/gateway-route/{id}/signing-key``,
stored sealed) are checked before this, as for every source of the route.
"""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field

from tidegate.components.base import BuildContext, Component, Needs, NodeRef
from tidegate.components.sources.decoding import Decoding, decode_events
from tidegate.components.sources.push import ROUTE_ITSELF, Push, Received
from tidegate.errors import Unauthorized
from tidegate.kit.signature import verify_signature

__all__ = ["COMPONENT", "PATHS", "WebhookConfig", "check_webhook_signature", "receive"]

PATHS: Final = frozenset({ROUTE_ITSELF})


class WebhookConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    signing_key: Annotated[str, Field(min_length=16, max_length=512)] | None = None
    decoding: Decoding = "auto"


def check_webhook_signature(
    config: WebhookConfig, *, raw_body: bytes, signature: str | None
) -> None:
    """401 unless ``signature`` is a valid HMAC of ``raw_body`` under the signing key
    (without one, as the platform's Terraform provider writes the source, only the
    route's access key and its own signing keys guard it)."""
    if config.signing_key is None:
        return
    if not verify_signature(raw_body, signature, [config.signing_key.encode()]):
        what = "Invalid" if signature else "Missing"
        raise Unauthorized(
            f"{what} X-Hub-Signature: send <sha1|sha256|sha384|sha512>=<hex HMAC of the body>"
        )


def receive(config: WebhookConfig, push: Push) -> Received:
    check_webhook_signature(config, raw_body=push.raw, signature=push.signature)
    return Received(
        decode_events(push.body, decoding=config.decoding, content_type=push.content_type)
    )


def _build(_config: WebhookConfig, _context: BuildContext, _node: NodeRef) -> None:
    return None


COMPONENT: Component[WebhookConfig] = Component(
    kind="source",
    type="webhook",
    config_model=WebhookConfig,
    build=_build,
    describe="Events POSTed to the gateway route; with `signing_key`, signed: `X-Hub-Signature: <sha1|sha256|sha384|sha512>=<hex HMAC of the raw body>` under it",
    needs=Needs(gateway_route=True),
    receive=receive,
    paths=PATHS,
)
