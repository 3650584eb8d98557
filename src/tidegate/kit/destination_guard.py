"""Where an ``http`` destination may send events: public addresses only, unless the
operator's allow-list (``TIDEGATE_DESTINATION_ALLOW``) says otherwise.

A tenant choosing a destination URL must not make the server talk to itself, to its
databases, to the cloud metadata service (169.254.169.254) or to the private network
it sits in. An address is refused when it is loopback, link-local, private (RFC 1918,
ULA ``fc00::/7``, shared ``100.64.0.0/10``), unspecified, multicast, reserved or any
other non-global range; IPv6 forms that embed an IPv4 address (mapped, 6to4, Teredo,
NAT64) are judged by that address too.

The check runs twice: when the node is saved (a 400 when the host is an IP literal or
resolves to a refused address) and when the connection is opened. At connect time the
name is resolved once, every address is vetted, and the socket is opened to a vetted
address (TLS still verifies, and SNI still names, the configured host), so a DNS answer
that changes between check and connect (rebinding) cannot reach a refused address.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import httpcore
import httpx

__all__ = [
    "DestinationPolicy",
    "DestinationRefused",
    "GuardedTransport",
    "policy_from_setting",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_NAT64: Final = ipaddress.ip_network("64:ff9b::/96")
RESOLVE_TIMEOUT_S: Final = 5.0


class DestinationRefused(Exception):
    """The destination's host is (or resolves to) an address tidegate may not reach."""


def _embedded_v4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_v4(address)
        if embedded is not None:
            return _public(embedded)
    return address.is_global and not address.is_multicast and not address.is_reserved


@dataclass(frozen=True, slots=True)
class DestinationPolicy:
    """The allow-list: networks (CIDR) and exact host names an operator permits even
    though they are not public."""

    networks: tuple[IPNetwork, ...] = ()
    hosts: frozenset[str] = frozenset()

    def host_allowed(self, host: str) -> bool:
        return host.rstrip(".").lower() in self.hosts

    def address_allowed(self, address: IPAddress) -> bool:
        if _public(address):
            return True
        candidates = [address]
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            candidates.append(address.ipv4_mapped)
        return any(
            candidate.version == network.version and candidate in network
            for candidate in candidates
            for network in self.networks
        )

    def vet(self, host: str, addresses: Iterable[str]) -> list[str]:
        """``addresses`` (as resolved for ``host``) when every one may be reached, else
        ``DestinationRefused``. Every address is vetted, not only the first: a name
        answering with one public and one private address is refused."""
        found = list(dict.fromkeys(addresses))
        if not found:
            raise DestinationRefused(f"{host} did not resolve to any address")
        if self.host_allowed(host):
            return found
        for text in found:
            address = ipaddress.ip_address(text.split("%", 1)[0])
            if not self.address_allowed(address):
                raise DestinationRefused(
                    f"{host} resolves to {address}, a non-public address; an operator "
                    "can permit it with TIDEGATE_DESTINATION_ALLOW"
                )
        return found

    async def resolve(self, host: str, port: int) -> list[str]:
        """Resolve ``host`` once (an IP literal as itself) and vet every address."""
        literal = _ip_literal(host)
        if literal is not None:
            return self.vet(host, [str(literal)])
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(RESOLVE_TIMEOUT_S):
                infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, TimeoutError) as error:
            # A transport error (retried), as when the name does not resolve at all.
            raise httpcore.ConnectError(f"cannot resolve {host}: {error}") from None
        return self.vet(host, [str(info[4][0]) for info in infos])


def _ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


@lru_cache(maxsize=8)
def policy_from_setting(value: str) -> DestinationPolicy:
    """``"127.0.0.1/32, 10.0.0.0/8, receiver.internal"``: CIDRs (a bare address is a
    one-address network) and host names, comma separated."""
    networks: list[IPNetwork] = []
    hosts: set[str] = set()
    for raw in value.split(","):
        item = raw.strip()
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item.strip("[]"), strict=False))
        except ValueError:
            if "/" in item or not item.replace("-", "").replace(".", "").isalnum():
                raise ValueError(
                    f"TIDEGATE_DESTINATION_ALLOW: {item!r} is neither a CIDR nor a host name"
                ) from None
            hosts.add(item.rstrip(".").lower())
    return DestinationPolicy(networks=tuple(networks), hosts=frozenset(hosts))


class _VettingBackend(httpcore.AsyncNetworkBackend):
    """Opens TCP connections only to vetted addresses of the requested host."""

    def __init__(self, policy: DestinationPolicy) -> None:
        self._policy = policy
        self._backend = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self._policy.resolve(host, port)
        error: Exception | None = None
        for address in addresses:
            try:
                return await self._backend.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as failure:
                error = failure
        assert error is not None
        raise error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise DestinationRefused("unix sockets are not destinations")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


@lru_cache(maxsize=1)
def tls_context() -> ssl.SSLContext:
    """The verifying TLS context every outbound connection uses: one per process (loading
    the CA bundle costs about 25 ms of CPU, paid twice per client before)."""
    return httpx.create_ssl_context(trust_env=False)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport with every connection opened through the policy. The client
    using it must not trust proxy settings from the environment (a proxy would do the
    connecting instead)."""

    def __init__(self, policy: DestinationPolicy, *, limits: httpx.Limits) -> None:
        super().__init__(verify=tls_context(), limits=limits, trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=tls_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_VettingBackend(policy),
        )
