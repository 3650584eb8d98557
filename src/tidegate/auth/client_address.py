"""The client's address as sign-in limits count it (docs/isolation.md).

The TCP peer's, unless the peer is one of ``trusted_proxies``: then the right-most
address of ``X-Forwarded-For`` that is not itself a trusted proxy (each proxy appends
the address it received from, so the entries left of the nearest untrusted one may be
forged by the client). From an untrusted peer the header is ignored.
"""

from __future__ import annotations

from functools import lru_cache
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address

from starlette.requests import HTTPConnection

from tidegate.app_state import app_state
from tidegate.config import parse_networks

UNKNOWN = "unknown"


@lru_cache(maxsize=8)
def _networks(text: str) -> tuple[IPv4Network | IPv6Network, ...]:
    return parse_networks(text)


def _parsed(text: str) -> IPv4Address | IPv6Address | None:
    try:
        return ip_address(text.strip())
    except ValueError:
        return None


def _trusted(
    address: IPv4Address | IPv6Address | None, networks: tuple[IPv4Network | IPv6Network, ...]
) -> bool:
    # An IPv4 address is in no IPv6 network (and the reverse): False, not an error.
    return address is not None and any(address in network for network in networks)


def client_address(request: HTTPConnection) -> str:
    peer = request.client.host if request.client is not None else UNKNOWN
    networks = _networks(app_state(request).settings.trusted_proxies)
    if not networks or not _trusted(_parsed(peer), networks):
        return peer
    hops = [
        hop.strip()
        for header in request.headers.getlist("x-forwarded-for")
        for hop in header.split(",")
    ]
    for hop in reversed(hops):
        address = _parsed(hop)
        if address is None:
            # Unreadable: whatever is left of it may be forged; the proxy's is the last known.
            return peer
        if not _trusted(address, networks):
            return str(address)
        peer = str(address)
    return peer
