"""The lines of the search benchmark's data set (``search_dataset.py``): one writer per
app, each building text, level and meta the way that program writes them, every
random choice from the one seeded generator it is given.

The words the benchmark's cases look for are here: the rare word ``quarantined``
(0.1% of lines), the common word ``request``, the phrase ``connection reset by peer``
(as nginx, Python and PostgreSQL write it); and near misses that a superset index
finds but the matcher rejects: ``unquarantined``, the rare word only in meta,
``ECONNRESET`` in text but not in ``meta.error.code``, the phrase with two spaces, the
flattened key ``{"error.code": ...}`` (which the matcher reads before the nested path).
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from tidegate.logs.store import NewLine

RARE_WORD = "quarantined"
COMMON_WORD = "request"
PHRASE = "connection reset by peer"


def _weighted(pairs: list[tuple[Any, float]]) -> Callable[[random.Random], Any]:
    """A picker of one item by weight (bisect over cumulative weights)."""
    items = [item for item, _ in pairs]
    cumulative = list(accumulate(weight for _, weight in pairs))
    top = cumulative[-1]

    def pick(rng: random.Random) -> Any:
        return items[bisect.bisect(cumulative, rng.random() * top)]

    return pick


FIRST_NAMES = [
    "anna", "ben", "chloé", "dmitri", "emma", "françois", "günter", "hana", "ivan",
    "jürgen", "kofi", "léa", "marta", "noah", "oğuz", "priya", "søren", "zoë", "józef",
    "straße", "wei", "yuki", "ángel", "mia",
]  # fmt: skip
DOMAINS = ["example.com", "example.de", "mail.example.org", "corp.example.net"]
ROUTES = [
    "/api/v1/orders", "/api/v1/orders/{id}", "/api/v1/customers/{id}", "/api/v1/checkout",
    "/api/v1/cart/{id}/items", "/api/v2/search", "/api/v2/products/{id}", "/healthz",
    "/api/v1/invoices/{id}/pdf", "/static/app.{id}.js", "/login", "/api/v1/requests/{id}",
]  # fmt: skip
USER_AGENTS = [
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/128.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
    "curl/8.5.0",
    "python-httpx/0.27.0",
    "kube-probe/1.30",
]
QUEUES = ["emails", "exports", "thumbnails", "billing-sync", "search-index"]
ERROR_CODES = ["ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH"]
PLANS = ["free", "pro", "team", "enterprise"]
ROLES = ["admin", "dev", "viewer", "billing", "support"]
SQL = [
    "SELECT * FROM orders WHERE customer_id = $1 ORDER BY created_at DESC LIMIT 50",
    "UPDATE carts SET updated_at = now() WHERE id = $1",
    "INSERT INTO events (kind, payload) VALUES ($1, $2)",
    "SELECT count(*) FROM sessions WHERE expires_at > now()",
]
APPS: list[tuple[str | None, float]] = [
    ("web", 0.25), ("api", 0.25), ("worker", 0.14), ("auth", 0.08), ("billing", 0.05),
    ("webhooks", 0.04), ("websocket-gw", 0.03), ("postgres", 0.08), ("cron", 0.03),
    (None, 0.05),
]  # fmt: skip


class LineWriter:
    """Builds one line at a time; every random choice comes from the one seeded rng."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.pick_app = _weighted(APPS)
        self.hosts = {
            "web": [f"web-{n:02d}.prod.eu-west-1" for n in range(1, 13)],
            "api": [f"api-{n}.prod.eu-west-1" for n in range(1, 9)],
            "worker": [f"worker-{n}.prod.eu-west-1" for n in range(1, 7)],
            "postgres": ["db-primary.prod", "db-replica-1.prod", "db-replica-2.prod"],
        }
        self.shared_hosts = [f"app-{n}.prod.us-east-1" for n in range(1, 7)]
        self.writers: dict[str | None, Callable[[bool], tuple[str, str | None, dict[str, Any]]]]
        self.writers = {
            "web": self._web,
            "webhooks": self._webhooks,
            "websocket-gw": self._websocket,
            "api": self._api,
            "worker": self._worker,
            "auth": self._auth,
            "billing": self._billing,
            "postgres": self._postgres,
            "cron": self._cron,
            None: self._kernel,
        }

    def line(self, ts: int, incident: bool, seq: int | None) -> NewLine:
        rng = self.rng
        app = self.pick_app(rng)
        host = rng.choice(self.hosts.get(app) or self.shared_hosts)
        draw = rng.random()
        if draw < 0.001:
            text, level, meta = self._rare()
        else:
            text, level, meta = self.writers[app](incident)
            if draw < 0.0014:  # near misses of the rare word
                if rng.random() < 0.5:
                    text += " (message was unquarantined by admin)"
                else:
                    meta["note"] = "released from quarantined storage"
        if seq is not None:
            meta["request_id"] = f"req_{seq:09d}"
        keep_meta = rng.random() >= 0.08  # plain-text shippers send no meta at all
        return NewLine(
            line=text,
            ts=ts,
            host=host,
            app=app,
            level=level,
            env="production" if rng.random() < 0.9 else "staging",
            file=f"/var/log/{app or 'syslog'}/{app or 'kern'}.log" if rng.random() < 0.5 else None,
            tags=["k8s", "eu-west-1"] if rng.random() < 0.3 else None,
            meta=meta if keep_meta else None,
        )

    # -- one writer per app: (text, level, meta) ------------------------------------------

    def _ip(self) -> str:
        rng = self.rng
        return f"{rng.randrange(1, 223)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"

    def _route(self) -> str:
        return self.rng.choice(ROUTES).replace("{id}", str(self.rng.randrange(1, 999_999)))

    def _http_meta(self, method: str, route: str, status: int, duration: float) -> dict[str, Any]:
        return {
            "http": {"method": method, "route": route, "status": status, "duration_ms": duration}
        }

    def _user(self) -> dict[str, Any]:
        rng = self.rng
        return {
            "id": rng.randrange(1, 250_000),
            "plan": rng.choice(PLANS),
            "roles": rng.sample(ROLES, rng.randrange(0, 3)),
        }

    def _error_meta(self, code: str | None = None) -> dict[str, Any]:
        rng = self.rng
        code = code or rng.choice(ERROR_CODES)
        if rng.random() < 0.15:
            code = code.lower()
        return {"code": code, "retryable": rng.random() < 0.7, "attempt": rng.randrange(1, 6)}

    def _web(self, incident: bool) -> tuple[str, str | None, dict[str, Any]]:
        rng = self.rng
        error_rate = 0.25 if incident else 0.05
        if rng.random() < error_rate:  # nginx error log
            ip, route = self._ip(), self._route()
            if rng.random() < 0.4:
                reason = "recv() failed (104: Connection reset by peer) while reading response header from upstream"
                meta: dict[str, Any] = {"error": self._error_meta("ECONNRESET")}
            else:
                reason = "upstream timed out (110: Connection timed out) while reading response header from upstream"
                meta = {"error": self._error_meta("ETIMEDOUT")}
            text = (
                f"{rng.randrange(1000, 9999)}#0: *{rng.randrange(10**6)} {reason}, client: {ip}, "
                f'server: shop.example.com, request: "GET {route} HTTP/1.1", '
                f'upstream: "http://10.0.3.{rng.randrange(2, 40)}:8080{route}"'
            )
            return text, rng.choice(["ERROR", "ERROR", "error"]), meta
        method = rng.choice(["GET", "GET", "GET", "POST", "PUT", "DELETE"])
        route = self._route()
        status = rng.choice([200] * 20 + [201, 204, 301, 304, 400, 401, 404, 404, 429, 500, 502])
        duration = round(rng.expovariate(1 / 40), 3)
        text = (
            f'{self._ip()} - - "{method} {route} HTTP/1.1" {status} {rng.randrange(200, 90_000)} '
            f'"-" "{rng.choice(USER_AGENTS)}" rt={duration / 1000:.3f}'
        )
        level = "INFO" if status < 400 else ("WARN" if status < 500 else "ERROR")
        return text, level, self._http_meta(method, route, status, duration)

    def _webhooks(self, incident: bool) -> tuple[str, str | None, dict[str, Any]]:
        rng = self.rng
        event = rng.choice(["invoice.paid", "order.created", "customer.updated"])
        target = f"https://hooks.customer{rng.randrange(1, 400)}.example.com/tidegate"
        if rng.random() < (0.3 if incident else 0.08):
            text = f"delivery of {event} to {target} failed: connection reset by peer; retry {rng.randrange(1, 10)}/10 in 60s"
            return text, "error", {"event": event, "error": self._error_meta("ECONNRESET")}
        ms = rng.randrange(20, 900)
        text = f"delivered {event} to {target} (200 in {ms}ms)"
        return text, "info", {"event": event, "latency_ms": ms, "attempts": [1]}

    def _websocket(self, incident: bool) -> tuple[str, str | None, dict[str, Any]]:
        rng = self.rng
        client = f"c-{rng.getrandbits(32):08x}"
        if rng.random() < 0.05:
            return (
                f"client {client} disconnected: code=1006 reason=abnormal closure",
                "Error",
                {"client": client, "ws": {"code": 1006, "frames": [rng.randrange(100), 0]}},
            )
        return f"client {client} connected from {self._ip()}", "Info", {"client": client}

    def _api(self, incident: bool) -> tuple[str, str | None, dict[str, Any]]:
        rng = self.rng
        method = rng.choice(["GET", "GET", "POST", "PATCH"])
        route = self._route()
        duration = round(rng.lognormvariate(3, 1), 3)
        draw = rng.random()
        meta: dict[str, Any] = {
            **self._http_meta(method, route, 200, duration),
            "user": self._user(),
            "k8s": {"namespace": "shop", "pod": f"api-7f9c{rng.randrange(100)}-x", "restarts": 0},
        }
        if draw < (0.12 if incident else 0.03):
            meta["http"]["status"] = 502
            meta["error"] = self._error_meta("ECONNRESET")
            text = f"upstream payments-svc request failed: ConnectionResetError(104, 'Connection reset by peer') during {method} {route}"
            return text, "error", meta
        if draw < 0.05:
            meta["http"]["status"] = 500
            meta["error"] = {"type": "OperationalError", "code": "08006"}
            text = f"unhandled exception in {method} {route}: psycopg.OperationalError: server closed the connection unexpectedly"
            return text, "error", meta
        if draw < 0.09:
            attempt = rng.randrange(2, 6)
            text = (
                f"retrying request to inventory-svc (attempt {attempt}/5) after a timeout of 5000ms"
            )
            meta["retry"] = {"attempt": attempt, "backoff_s": [0.5, 1.0, 2.0][: attempt - 1]}
            return text, "warning", meta
        if draw < 0.15:
            text = f"slow query ({duration * 20:.1f} ms): {rng.choice(SQL)}"
            meta["db"] = {"rows": rng.randrange(0, 5000), "ratio": rng.random() / 10**5}
            return text, "warning", meta
        if draw < 0.30:
            return (
                f"cache miss for orders:{rng.randrange(10**6)}; loading from database",
                "debug",
                meta,
            )
        return f"request completed: {method} {route} -> 200 ({duration} ms)", "info", meta

    def _worker(self, incident: bool) -> tuple[str, str | None, dict[str, Any]]:
        rng = self.rng
        job = f"job-{rng.getrandbits(40):010x}"
        queue = rng.choice(QUEUES)
        meta: dict[str, Any] = {
            "job": {"id": job, "queue": queue, "args": [rng.randrange(999), "x"]}
        }
        draw = rng.random()
        if draw < (0.15 if incident else 0.04):
            code = rng.choice(ERROR_CODES)
            meta["error"] = self._error_meta(code)
            if code == "ECONNRESET" and rng.random() < 0.3:
                # The flattened form: read before the nested path by the matcher.
                meta["error.code"] = "ECONNREFUSED"
            return f"{job} ({queue}) failed: read {code}; will retry", "ERROR", meta
        if draw < 0.06:
            # ECONNRESET in the text only: an index over the text finds it, the meta
            # query must not select it.
            return (
                f"{job} ({queue}) recovered after a read ECONNRESET from smtp relay",
                "WARN",
                meta,
            )
        if draw < 0.5:
            return f"{job} ({queue}) started", "INFO", meta
        seconds = round(rng.expovariate(1 / 3), 2)
        meta["job"]["seconds"] = seconds
        return f"{job} ({queue}) finished in {seconds}s", "INFO", meta

    def _auth(self, incident: bool) -> tuple[str, str | None, dict[str, Any]]:
        rng = self.rng
        name = rng.choice(FIRST_NAMES)
        email = f"{name}.{rng.randrange(1, 999)}@{rng.choice(DOMAINS)}"
        if rng.random() < 0.3:
            email = email.upper()  # what some clients send
        ip = self._ip()
        meta: dict[str, Any] = {
            "user": {"email": email, **self._user()},
            "client": {"ip": ip, "mfa": rng.choice(["totp", "webauthn", None])},
        }
        draw = rng.random()
        if draw < 0.08:
            return f"login failed for {email} from {ip}: invalid password", "warn", meta
        if draw < 0.1:
            return f"password reset request for {email}", "info", meta
        return f"login succeeded for {email} from {ip}", "info", meta

    def _billing(self, incident: bool) -> tuple[str, str | None, dict[str, Any]]:
        rng = self.rng
        customer = f"cus_{rng.getrandbits(48):012x}"
        amount = round(rng.uniform(5, 2_000), 2)
        meta: dict[str, Any] = {"customer": {"id": customer}, "amount": amount, "currency": "EUR"}
        if rng.random() < 0.06:
            meta["decline"] = {"code": "card_declined", "reason": "insufficient_funds"}
            return (
                f"payment declined for {customer}: card_declined (insufficient_funds)",
                "WARNING",
                meta,
            )
        return (
            f"invoice in_{rng.getrandbits(40):010x} charged {amount:.2f} EUR to {customer}",
            "INFO",
            meta,
        )

    def _postgres(self, incident: bool) -> tuple[str, str | None, dict[str, Any]]:
        rng = self.rng
        meta: dict[str, Any] = {
            "pg": {"pid": rng.randrange(1000, 60000), "db": "shop", "user": "app"}
        }
        draw = rng.random()
        if draw < (0.1 if incident else 0.02):
            return "could not receive data from client: Connection reset by peer", "LOG", meta
        if draw < 0.03:
            meta["pg"]["sqlstate"] = "23505"
            return 'duplicate key value violates unique constraint "orders_pkey"', "ERROR", meta
        if draw < 0.031:
            return "terminating connection due to administrator command", "FATAL", meta
        if draw < 0.033:  # two spaces: not the phrase
            return "could not send data to client: connection  reset by peer", "LOG", meta
        return (
            f"duration: {rng.expovariate(1 / 8):.3f} ms  statement: {rng.choice(SQL)}",
            "LOG",
            meta,
        )

    def _cron(self, incident: bool) -> tuple[str, str | None, dict[str, Any]]:
        rng = self.rng
        files = rng.randrange(100, 90_000)
        meta: dict[str, Any] = {
            "backup": {"files": files, "gb": round(files / 7_000, 2), "ok": True}
        }
        return f"backup finished: {files} files in {rng.randrange(30, 900)}s", "Info", meta

    def _kernel(self, incident: bool) -> tuple[str, str | None, dict[str, Any]]:
        rng = self.rng
        if rng.random() < 0.2:
            text = "TCP: request_sock_TCP: Possible SYN flooding on port 443. Sending cookies."
        else:
            text = f"eth0: link up, {rng.choice([1000, 10000])} Mbps, full duplex, lpa 0x{rng.getrandbits(16):04X}"
        return text, None, {"kernel": {"uptime_s": rng.random() * 10**6}}

    def _rare(self) -> tuple[str, str | None, dict[str, Any]]:
        rng = self.rng
        if rng.random() < 0.5:
            text = f"message <{rng.getrandbits(48):012x}@mail.example.org> quarantined by policy spam-high"
        else:
            text = f"upload {rng.getrandbits(64):016x}.pdf QUARANTINED: matched signature Eicar-Test-Signature"
        return text, "warning", {"scanner": {"engine": "clamav", "score": round(rng.random(), 4)}}
