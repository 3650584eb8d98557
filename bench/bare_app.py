"""Floors for bench_account_read, served by the same server (uvicorn, uvloop, httptools).

``fastapi_floor``: a FastAPI route doing the same work as tidegate's account read with
the raw driver (stdlib ``sqlite3``, or ``asyncpg`` on PostgreSQL): keyed hash of the
presented token, key row joined to its account, the account with its owner, the
owner's short ids, and the same JSON. No ORM, no session, no dependency beyond the
request, no response model.

``asgi_floor``: a bare ASGI app answering every request with tidegate's JSON bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import sqlite3
from pathlib import Path
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response

DATABASE_URL = os.environ.get("TIDEGATE_DATABASE_URL", "")
DOMAIN = b"tidegate:management-key"

_KEY = (
    "SELECT k.id, k.kind, k.enterprise_id, k.key_hash, a.id, a.enterprise_id, a.status"
    " FROM api_keys AS k LEFT OUTER JOIN accounts AS a ON a.id = k.account_id"
    " WHERE k.key_hash = {p}"
)
_ACCOUNT = (
    "SELECT a.id, a.enterprise_id, a.short_id, a.company, a.deactivated_at, a.external_id,"
    " a.plan_type, a.retention, a.status, a.created_at, a.meta, u.id, u.email, u.firstname,"
    " u.lastname, u.verified FROM accounts AS a JOIN users AS u ON u.id = a.owner_id"
    " WHERE a.id = {p} AND a.enterprise_id = {q}"
)
_SHORT_IDS = "SELECT short_id FROM accounts WHERE owner_id = {p} ORDER BY created_at LIMIT 200"
_LINKS = {
    "self": {
        "list": {"method": "get", "uri": "/v3/enterprise/account"},
        "detail": {"method": "get", "uri": "/v3/enterprise/account/{account_id}"},
        "update": {"method": "patch", "uri": "/v3/enterprise/account/{account_id}"},
        "replace": None,
        "create": {"method": "post", "uri": "/v3/enterprise/account"},
    },
    "related": {
        "enterprise": "/v3/enterprise",
        "features": "/v3/enterprise/account/{account_id}/features",
    },
}


def _when(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):  # SQLite's text form, stored in UTC
        text = value.replace(" ", "T").removesuffix(".000000")
        return text + "Z"
    text = value.isoformat().replace("+00:00", "Z")
    return str(text)


def _body(row: Any, short_ids: list[str]) -> bytes:
    first, last = row[13] or "", row[14] or ""
    name = f"{first} {last}".strip() or row[12].split("@", 1)[0]
    meta = row[10]
    if isinstance(meta, str):
        meta = orjson.loads(meta)
    data = {
        "account_id": row[0],
        "enterprise_id": row[1],
        "account": row[2],
        "company": row[3],
        "deactivated": _when(row[4]),
        "owneremail": row[12],
        "external_id": row[5],
        "plan": {"type": row[6]},
        "quota": {"retention": row[7]},
        "retention": row[7],
        "status": row[8],
        "created": _when(row[9]),
        "meta": meta or {},
        "owner": {
            "user_id": row[11],
            "firstname": first,
            "lastname": last,
            "email": row[12],
            "name": name[:125],
            "accounts": short_ids,
            "enterprise_ids": [row[1]],
            "verified": bool(row[15]),
        },
    }
    meta_out = {
        "type": "account",
        "page": {"next": None, "previous": None},
        "pk": "account_id",
        "links": _LINKS,
    }
    return orjson.dumps({"meta": meta_out, "data": data})


def _secret(request: Request) -> str | None:
    authorization = request.headers.get("authorization")
    if authorization:
        scheme, _, value = authorization.strip().partition(" ")
        return value.strip() if scheme.lower() == "token" and value.strip() else None
    return request.headers.get("servicekey")


def _key_hash(request: Request) -> str | None:
    secret = _secret(request)
    return None if secret is None else hmac.new(DOMAIN, secret.encode(), hashlib.sha256).hexdigest()


def _checked(key: Any, key_hash: str) -> Any:
    if key is None or not hmac.compare_digest(key[3].encode(), key_hash.encode()):
        return None
    return key


def _sqlite_key(request: Request) -> Any:
    """The presented key's row joined to its account, or None (SQLite)."""
    key_hash = _key_hash(request)
    if key_hash is None:
        return None
    return _checked(_db.execute(_KEY.format(p="?"), (key_hash,)).fetchone(), key_hash)


async def _pg_key(conn: Any, request: Request) -> Any:
    """The presented key's row joined to its account, or None (PostgreSQL)."""
    key_hash = _key_hash(request)
    if key_hash is None:
        return None
    return _checked(await conn.fetchrow(_KEY.format(p="$1"), key_hash), key_hash)


def _unauthorized() -> Response:
    return Response(b'{"status":401}', status_code=401, media_type="application/json")


fastapi_floor = FastAPI()

if DATABASE_URL.startswith("sqlite"):
    _path = DATABASE_URL.split("///", 1)[1]
    _db = sqlite3.connect(_path, isolation_level=None, check_same_thread=False)
    _db.execute("PRAGMA journal_mode=WAL")

    @fastapi_floor.get("/v3/enterprise/account/{account_id}")
    async def sqlite_account(account_id: str, request: Request) -> Response:
        key = _sqlite_key(request)
        if key is None:
            return _unauthorized()
        row = _db.execute(_ACCOUNT.format(p="?", q="?"), (account_id, key[2])).fetchone()
        if row is None:
            return Response(b'{"status":404}', status_code=404, media_type="application/json")
        short_ids = [r[0] for r in _db.execute(_SHORT_IDS.format(p="?"), (row[11],))]
        return Response(_body(row, short_ids), media_type="application/json")

elif DATABASE_URL:
    import asyncpg

    _pool: asyncpg.Pool | None = None
    _dsn = DATABASE_URL.replace("postgresql+asyncpg://", "postgresql://")

    async def _pg_pool() -> asyncpg.Pool:
        global _pool
        if _pool is None:
            _pool = await asyncpg.create_pool(_dsn, min_size=4, max_size=10)
        return _pool

    @fastapi_floor.get("/v3/enterprise/account/{account_id}")
    async def pg_account(account_id: str, request: Request) -> Response:
        async with (await _pg_pool()).acquire() as conn:
            key = await _pg_key(conn, request)
            if key is None:
                return _unauthorized()
            row = await conn.fetchrow(_ACCOUNT.format(p="$1", q="$2"), account_id, key[2])
            if row is None:
                return Response(b'{"status":404}', status_code=404)
            short_ids = [r[0] for r in await conn.fetch(_SHORT_IDS.format(p="$1"), row[11])]
        return Response(_body(row, short_ids), media_type="application/json")


_BODY_FILE = os.environ.get("BENCH_BODY_FILE")
BODY = Path(_BODY_FILE).read_bytes() if _BODY_FILE else b"{}"
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]


async def asgi_floor(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})


# The floor of bench_management_reads: per route, the same credential read and the same
# rows (every column of the route's table, by the same account or enterprise and in the
# same order) through the raw driver, answered as JSON objects keyed by column name.
# The bodies are the same rows, not byte-identical to tidegate's documents.
MANAGEMENT_READS: dict[str, str] = {
    # Before "/v3/pipeline/{id}", which would take "gateway-route" (or "component-type")
    # for a pipeline id. The component types' floor reads the account's features only.
    # The last hour by minute (bucket_ms is a minute's start already).
    "/v3/pipeline/metric/usage": (
        "SELECT pipeline_id, component_id, bucket_ms, CAST(sum(ingress_events) AS BIGINT),"
        " CAST(sum(ingress_bytes) AS BIGINT), CAST(sum(egress_events) AS BIGINT),"
        " CAST(sum(egress_bytes) AS BIGINT) FROM pipeline_usage"
        " WHERE account_id = {account} GROUP BY pipeline_id, component_id, bucket_ms"
        " ORDER BY bucket_ms, pipeline_id, component_id"
    ),
    "/v3/pipeline/component-type": (
        "SELECT feature FROM account_features WHERE account_id = {account}"
    ),
    "/v3/pipeline/gateway-route": (
        "SELECT r.*, n.pipeline_id AS source_pipeline_id, n.id AS source_id FROM"
        " gateway_routes AS r LEFT OUTER JOIN pipeline_nodes AS n ON n.gateway_route_id = r.id"
        " AND n.kind = 'source' WHERE r.account_id = {account}"
        " ORDER BY r.created_at, r.id, n.created_at, n.id"
    ),
    "/v3/pipeline/gateway-route/{id}": (
        "SELECT r.*, n.pipeline_id AS source_pipeline_id, n.id AS source_id FROM"
        " gateway_routes AS r LEFT OUTER JOIN pipeline_nodes AS n ON n.gateway_route_id = r.id"
        " AND n.kind = 'source' WHERE r.account_id = {account} AND r.id = {id}"
        " ORDER BY n.created_at, n.id"
    ),
    "/v3/pipeline/gateway-route/{id}/access-key": (
        "SELECT k.id, k.account_id, k.title, k.gateway_route_id, k.hint, k.created_at FROM"
        " gateway_routes AS r LEFT OUTER JOIN access_keys AS k ON k.gateway_route_id = r.id"
        " WHERE r.account_id = {account} AND r.id = {id} ORDER BY k.created_at, k.id"
    ),
    "/v3/pipeline/gateway-route/{id}/signing-key": (
        "SELECT k.id, k.account_id, k.gateway_route_id, k.fingerprint, k.created_at FROM"
        " gateway_routes AS r LEFT OUTER JOIN signing_keys AS k ON k.gateway_route_id = r.id"
        " WHERE r.account_id = {account} AND r.id = {id} ORDER BY k.created_at, k.id"
    ),
    "/v3/pipeline/{id}/source": (
        "SELECT n.* FROM pipelines AS p JOIN pipeline_nodes AS n ON n.pipeline_id = p.id"
        " WHERE p.account_id = {account} AND p.id = {id} AND n.kind = 'source'"
        " ORDER BY n.created_at, n.id"
    ),
    "/v3/pipeline/{id}/source/{node}/alert": (
        "SELECT a.* FROM pipelines AS p LEFT OUTER JOIN pipeline_alerts AS a"
        " ON a.pipeline_id = p.id WHERE p.account_id = {account} AND p.id = {id}"
        " ORDER BY a.created_at, a.id"
    ),
    "/v3/pipeline/{pipeline}/alert/{id}": (
        "SELECT * FROM pipeline_alerts WHERE account_id = {account} AND id = {id}"
    ),
    "/v3/pipeline/{pipeline}/source/{id}": (
        "SELECT n.* FROM pipeline_nodes AS n JOIN pipelines AS p ON p.id = n.pipeline_id"
        " WHERE p.account_id = {account} AND n.id = {id} AND n.kind = 'source'"
    ),
    "/v1/config/ingestion/exclusions": (
        "SELECT * FROM exclusion_rules WHERE account_id = {account} ORDER BY created_at, id"
    ),
    "/v1/config/ingestion/exclusions/{id}": (
        "SELECT * FROM exclusion_rules WHERE account_id = {account} AND id = {id}"
    ),
    "/v1/config/keys": "SELECT * FROM api_keys WHERE account_id = {account} ORDER BY created_at",
    "/v1/config/view": "SELECT * FROM views WHERE account_id = {account} ORDER BY created_at",
    "/v1/config/view/{id}": "SELECT * FROM views WHERE account_id = {account} AND id = {id}",
    "/v1/config/board": "SELECT * FROM boards WHERE account_id = {account} ORDER BY created_at",
    "/v1/config/board/{id}": (
        "SELECT b.*, a.short_id FROM boards AS b JOIN accounts AS a ON a.id = b.account_id"
        " WHERE b.account_id = {account} AND b.id = {id}"
    ),
    "/v1/config/members/{id}": (
        "SELECT m.role, m.created_at, u.id, u.email, u.firstname, u.lastname FROM memberships"
        " AS m JOIN users AS u ON u.id = m.user_id WHERE m.account_id = {account}"
        " AND u.email = {id}"
    ),
    "/v3/pipeline/{id}": (
        "SELECT p.*, n.* FROM pipelines AS p LEFT OUTER JOIN pipeline_nodes AS n"
        " ON n.pipeline_id = p.id WHERE p.account_id = {account} AND p.id = {id}"
        " ORDER BY n.created_at, n.id"
    ),
    "/v1/config/members": (
        "SELECT m.role, m.created_at, u.id, u.email, u.firstname, u.lastname FROM memberships"
        " AS m JOIN users AS u ON u.id = m.user_id WHERE m.account_id = {account}"
        " ORDER BY m.created_at"
    ),
    "/v3/pipeline": "SELECT * FROM pipelines WHERE account_id = {account} ORDER BY created_at",
    "/v1/config/presetalert": (
        "SELECT * FROM preset_alerts WHERE account_id = {account} ORDER BY created_at"
    ),
    "/v1/config/presetalert/{id}": (
        "SELECT * FROM preset_alerts WHERE account_id = {account} AND id = {id}"
    ),
    "/v1/config/groups": (
        "SELECT g.*, u.email FROM groups AS g LEFT OUTER JOIN group_members AS gm"
        " ON gm.group_id = g.id LEFT OUTER JOIN users AS u ON u.id = gm.user_id"
        " WHERE g.account_id = {account} ORDER BY g.created_at, g.id, u.email"
    ),
    "/v1/config/groups/{id}": (
        "SELECT g.*, u.email FROM groups AS g LEFT OUTER JOIN group_members AS gm"
        " ON gm.group_id = g.id LEFT OUTER JOIN users AS u ON u.id = gm.user_id"
        " WHERE g.account_id = {account} AND g.id = {id} ORDER BY u.email"
    ),
    "/v1/config/categories/views": (
        "SELECT * FROM categories WHERE account_id = {account} AND type = 'views'"
        " ORDER BY created_at, id"
    ),
    "/v1/config/categories/views/{id}": (
        "SELECT * FROM categories WHERE account_id = {account} AND type = 'views' AND id = {id}"
    ),
    "/v1/config/parsing/templates": (
        "SELECT * FROM parsing_templates WHERE account_id = {account}"
        " ORDER BY position, created_at, id"
    ),
    "/v1/config/parsing/templates/{id}": (
        "SELECT * FROM parsing_templates WHERE account_id = {account} AND id = {id}"
    ),
    "/v1/config/archiving": "SELECT * FROM archive_configs WHERE account_id = {account}",
    "/v1/config/index-rate": "SELECT * FROM index_rate_alerts WHERE account_id = {account}",
    "/v1/config/ingestion/status": (
        "SELECT ingestion_suspended_at FROM accounts WHERE id = {account}"
    ),
    "/v1/config/archiving/status": (
        "SELECT c.integration, d.* FROM archive_configs AS c LEFT OUTER JOIN archive_days AS d"
        " ON d.account_id = c.account_id WHERE c.account_id = {account}"
        " ORDER BY d.day DESC LIMIT 31"
    ),
    "/info": "SELECT id, company FROM accounts WHERE id = {account}",
    "/orgs": "SELECT id, company FROM accounts WHERE id = {account}",
    "/v1/auth/session": "SELECT id, company FROM accounts WHERE id = {account}",
    # mzm's accounts, read with the service key: its one account, with its owner.
    "/v3/auth/account": (
        "SELECT a.*, u.email, u.firstname, u.lastname, u.verified FROM accounts AS a"
        " JOIN users AS u ON u.id = a.owner_id WHERE a.id = {account}"
    ),
    "/v3/auth/account/{id}": (
        "SELECT a.*, u.email, u.firstname, u.lastname, u.verified FROM accounts AS a"
        " JOIN users AS u ON u.id = a.owner_id WHERE a.id = {account} AND a.id = {id}"
    ),
    "/v1/config/view/{id}/alerts": (
        "SELECT d.id, d.fired_ms, d.event, d.integration, d.channel_key, d.status, d.attempts,"
        " d.last_error, d.finished_ms, d.payload FROM views AS v JOIN alert_deliveries AS d"
        " ON d.view_id = v.id AND d.account_id = v.account_id"
        " WHERE v.account_id = {account} AND v.id = {id}"
        " ORDER BY d.fired_ms DESC, d.id LIMIT 500"
    ),
    # The account's days (none here): the 30 days' zeros are tidegate's own work.
    "/v1/usage": (
        "SELECT day, lines_stored, bytes_stored, lines_excluded, bytes_excluded,"
        " lines_fallback FROM account_usage WHERE account_id = {account} ORDER BY day"
    ),
    "/v3/enterprise/account/{id}/features": (
        "SELECT f.feature, f.created_at FROM accounts AS a JOIN users AS u ON u.id = a.owner_id"
        " LEFT OUTER JOIN account_features AS f ON f.account_id = a.id"
        " WHERE a.enterprise_id = {enterprise} AND a.id = {id} ORDER BY f.feature"
    ),
    "/v3/enterprise/account": (
        "SELECT a.*, u.email, u.firstname, u.lastname, u.verified FROM accounts AS a"
        " JOIN users AS u ON u.id = a.owner_id WHERE a.enterprise_id = {enterprise}"
        " ORDER BY a.created_at"
    ),
}


def _rows_json(columns: list[str], rows: Any) -> bytes:
    return orjson.dumps([dict(zip(columns, row, strict=True)) for row in rows])


management_floor = FastAPI()


def _management_route(path: str, sql: str) -> None:
    if DATABASE_URL.startswith("sqlite"):
        query = sql.format(account="?", enterprise="?", id="?")

        async def read(request: Request) -> Response:
            key = _sqlite_key(request)
            if key is None:
                return _unauthorized()
            owner = key[2] if "{enterprise}" in sql else key[4]
            args = (owner, request.path_params["id"]) if "{id}" in sql else (owner,)
            cursor = _db.execute(query, args)
            columns = [column[0] for column in cursor.description]
            return Response(_rows_json(columns, cursor.fetchall()), media_type="application/json")

    else:
        query = sql.format(account="$1", enterprise="$1", id="$2")

        async def read(request: Request) -> Response:
            async with (await _pg_pool()).acquire() as conn:
                key = await _pg_key(conn, request)
                if key is None:
                    return _unauthorized()
                owner = key[2] if "{enterprise}" in sql else key[4]
                args = (owner, request.path_params["id"]) if "{id}" in sql else (owner,)
                rows = await conn.fetch(query, *args)
            columns = list(rows[0].keys()) if rows else []
            return Response(_rows_json(columns, rows), media_type="application/json")

    management_floor.add_api_route(path, read, methods=["GET"])


if DATABASE_URL:
    for _path, _sql in MANAGEMENT_READS.items():
        _management_route(_path, _sql)
