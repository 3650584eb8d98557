"""The export's ``pagination_id``: where the next page starts, sealed.

It is encrypted and authenticated under the server secret (Fernet, through the app's
``Sealer``), so it is opaque to clients and cannot be altered or forged. Inside: the
account, a digest of the parameters that decide the export's lines and order, the
high-water mark (the largest line id the export may return) and the (ts, id) of the
last line scanned. A cursor is refused (400) unless account and parameters match.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from tidegate.auth.secrets import Sealer
from tidegate.errors import BadRequest

# Domain separation: the sealer also seals signing keys; a cursor starts with this.
_PREFIX = "tidegate-export-cursor/1:"
MAX_CURSOR_CHARS = 2_000


def _canonical(token: str) -> bool:
    """Exactly a token this server issued: base64 decoding alone would ignore trailing
    garbage, and a cursor with extra characters should not pass."""
    if len(token) > MAX_CURSOR_CHARS:
        return False
    try:
        return base64.urlsafe_b64encode(base64.urlsafe_b64decode(token)).decode() == token
    except (ValueError, TypeError):
        return False


@dataclass(frozen=True, slots=True)
class ExportCursor:
    account_id: str
    fingerprint: str
    max_id: int
    last_ts: int
    last_id: int

    def seal(self, sealer: Sealer) -> str:
        payload = [self.account_id, self.fingerprint, self.max_id, self.last_ts, self.last_id]
        return sealer.seal(_PREFIX + json.dumps(payload, separators=(",", ":")))

    @classmethod
    def open(cls, token: str, *, sealer: Sealer, account_id: str, fingerprint: str) -> ExportCursor:
        plain = sealer.open(token) if _canonical(token) else None
        if plain is None or not plain.startswith(_PREFIX):
            raise BadRequest("pagination_id: not a valid pagination id")
        try:
            owner, bound_to, max_id, last_ts, last_id = json.loads(plain.removeprefix(_PREFIX))
            cursor = cls(str(owner), str(bound_to), int(max_id), int(last_ts), int(last_id))
        except (ValueError, TypeError):
            raise BadRequest("pagination_id: not a valid pagination id") from None
        if cursor.account_id != account_id or cursor.fingerprint != fingerprint:
            raise BadRequest(
                "pagination_id: belongs to another export; send the same from, to, hosts, "
                "apps, levels, query and prefer as the first request"
            )
        return cursor
