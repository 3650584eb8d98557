"""What the Kafka types share (the ``kafka`` source and destination, the
``azure-event-hub`` source, which reads Event Hubs' Kafka endpoint): the provider's
broker list and SASL fields, the client settings for ``aiokafka``, the destination
guard on every broker connection, backoff, and the ``tidegate_kafka_operations``
counter.

**The guard.** A tenant's brokers must not make the server talk to itself or its
private network, and a broker's metadata names further brokers (its advertised
listeners) that the client then connects to. So every connection any ``aiokafka``
client of this process opens goes through ``_guarded_create_conn`` (installed once in
place of ``aiokafka.client.create_conn``, the one function its client connects with):
the host is resolved once, every address vetted by the node's ``DestinationPolicy``
(registered under the client's ``client_id``; an unregistered client gets the default
policy: public addresses only), and the socket opened to a vetted address, TLS still
verifying and naming the configured host. A refusal is an ``OSError`` to ``aiokafka``
(a connection that failed) and is remembered, so the component reports it as refused,
not as a broker that is down. On save, a broker that is, or resolves now to, a refused
address is a 400 on ``/user_config/brokers/<n>/host``.
"""

from __future__ import annotations

import asyncio
import random
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, Final, Literal

import httpcore
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from tidegate import metrics
from tidegate.components.base import config_refused
from tidegate.kit.destination_guard import DestinationPolicy, DestinationRefused

__all__ = [
    "Broker",
    "BrokerRefused",
    "Brokers",
    "KafkaClientSettings",
    "SaslMechanism",
    "Secret",
    "backoff_s",
    "client_options",
    "count",
    "forget_client",
    "install_guard",
    "refusal_of",
    "register_client",
    "settings_of",
    "vet_brokers",
    "vet_host",
]

SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", ""]
"""The provider's three; ``""`` is what it sends when ``sasl.mechanism`` is left unset
(an unknown computed value), read as ``PLAIN``."""

REQUEST_TIMEOUT_MS: Final = 30_000


class Broker(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    host: Annotated[str, Field(min_length=1, max_length=255)]
    port: Annotated[int, Field(strict=True, ge=1, le=65535)]


def _distinct(brokers: list[Broker]) -> list[Broker]:
    if len(set(brokers)) != len(brokers):
        raise ValueError("brokers must be distinct")
    return brokers


Brokers = Annotated[list[Broker], Field(min_length=1, max_length=100), AfterValidator(_distinct)]


@dataclass(frozen=True, slots=True)
class KafkaClientSettings:
    """How to reach a cluster: bootstrap brokers, TLS, SASL."""

    brokers: tuple[tuple[str, int], ...]
    tls: bool
    sasl_mechanism: str | None = None
    """None: no SASL."""
    sasl_username: str = ""
    sasl_password: str = ""

    @property
    def bootstrap(self) -> list[str]:
        return [
            f"[{host}]:{port}" if ":" in host else f"{host}:{port}" for host, port in self.brokers
        ]


Secret = Annotated[str, Field(min_length=1, max_length=1024)]


def settings_of(config: Any) -> KafkaClientSettings:
    """The client settings of a node with the provider's ``brokers``, ``tls_enabled`` and
    ``sasl_*`` fields."""
    return KafkaClientSettings(
        brokers=tuple((broker.host, broker.port) for broker in config.brokers),
        tls=config.tls_enabled,
        sasl_mechanism=(config.sasl_mechanism or "") if config.sasl_enabled else None,
        sasl_username=config.sasl_username or "",
        sasl_password=config.sasl_password or "",
    )


@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    """Verifying (system CAs, host names checked), as every outbound connection."""
    return ssl.create_default_context()


def client_options(settings: KafkaClientSettings, client_id: str) -> dict[str, Any]:
    """``aiokafka`` keyword arguments common to producers and consumers."""
    secure = settings.tls
    options: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap,
        "client_id": client_id,
        "request_timeout_ms": REQUEST_TIMEOUT_MS,
        "retry_backoff_ms": 500,
        "metadata_max_age_ms": 300_000,
    }
    if settings.sasl_mechanism is not None:
        options["security_protocol"] = "SASL_SSL" if secure else "SASL_PLAINTEXT"
        options["sasl_mechanism"] = settings.sasl_mechanism or "PLAIN"
        options["sasl_plain_username"] = settings.sasl_username
        options["sasl_plain_password"] = settings.sasl_password
    else:
        options["security_protocol"] = "SSL" if secure else "PLAINTEXT"
    if secure:
        options["ssl_context"] = _tls_context()
    return options


def backoff_s(attempt: int, *, base_s: float, cap_s: float) -> float:
    """Seconds before retry ``attempt`` (0-based): exponential, capped, half jitter."""
    ceiling: float = min(cap_s, base_s * 2.0**attempt)
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def count(operation: str, outcome: str, amount: int = 1) -> None:
    """``tidegate_kafka_operations_total{operation, outcome}``."""
    metrics.KAFKA_OPERATIONS.labels(operation, outcome).inc(amount)


# --- the guard -----------------------------------------------------------------------


class BrokerRefused(OSError):
    """A broker address the destination policy refuses (an ``OSError``, so ``aiokafka``
    handles it as a connection that failed)."""


_POLICIES: dict[str, DestinationPolicy] = {}
_REFUSALS: dict[str, str] = {}
_installed = False


def register_client(client_id: str, policy: DestinationPolicy) -> None:
    _POLICIES[client_id] = policy
    _REFUSALS.pop(client_id, None)


def forget_client(client_id: str) -> None:
    _POLICIES.pop(client_id, None)
    _REFUSALS.pop(client_id, None)


def refusal_of(client_id: str) -> str | None:
    """Why the guard last refused a connection of that client, if it did (cleared)."""
    return _REFUSALS.pop(client_id, None)


class _PinnedLoop:
    """The event loop as an ``AIOKafkaConnection`` sees it, except that
    ``create_connection`` opens the socket to one of the vetted addresses (TLS
    verifying and naming the configured host)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, host: str, addresses: list[str]) -> None:
        self._loop = loop
        self._host = host
        self._addresses = addresses

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loop, name)

    async def create_connection(
        self, factory: Callable[[], Any], _host: str, port: int, *, ssl: Any = None
    ) -> Any:
        error: OSError | None = None
        for address in self._addresses:
            try:
                return await self._loop.create_connection(
                    factory,
                    address,
                    port,
                    ssl=ssl,
                    server_hostname=self._host if ssl else None,
                )
            except OSError as failure:
                error = failure
        assert error is not None
        raise error


async def _guarded_create_conn(host: str, port: int, **options: Any) -> Any:
    from aiokafka.conn import AIOKafkaConnection

    client_id = str(options.get("client_id", ""))
    policy = _POLICIES.get(client_id, DestinationPolicy())
    try:
        addresses = await policy.resolve(host, port)
    except DestinationRefused as error:
        _REFUSALS[client_id] = str(error)
        count("connect", "refused")
        raise BrokerRefused(str(error)) from None
    except (httpcore.ConnectError, ValueError) as error:  # ValueError: not a host name
        raise OSError(str(error)) from None
    conn = AIOKafkaConnection(host, port, **options)
    conn._loop = _PinnedLoop(conn._loop, host, addresses)
    await conn.connect()
    return conn


def install_guard() -> None:
    """Route every ``aiokafka`` connection through the guard (idempotent)."""
    global _installed
    if _installed:
        return
    import aiokafka.client

    aiokafka.client.create_conn = _guarded_create_conn
    _installed = True


async def vet_brokers(brokers: Sequence[Broker], policy: DestinationPolicy) -> None:
    """On save: a broker that is, or resolves now to, a refused address is a 400 (a name
    that does not resolve yet is accepted: checked again at every connection)."""
    for index, broker in enumerate(brokers):
        await vet_host(f"/brokers/{index}/host", broker.host, broker.port, policy)


async def vet_host(pointer: str, host: str, port: int, policy: DestinationPolicy) -> None:
    try:
        await policy.resolve(host, port)
    except DestinationRefused as error:
        message = f"must not target a non-public address: {error}"
        raise config_refused(
            pointer, message, keyword="format", params={"format": "hostname"}
        ) from None
    except (httpcore.ConnectError, ValueError):  # not resolvable (yet): checked again later
        pass
