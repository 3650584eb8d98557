"""A fresh database per test (the evaluator's cursor is one per store), the app over
ASGI with its own alert runner switched off, and evaluators driven by a hand clock."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from tests.conftest import AppClient, make_settings, open_client
from tests.hand_clock import HandClock
from tests.ingest.factories import Ingestor, make_ingestor

from tidegate.alerts.evaluator import Evaluator
from tidegate.alerts.outbox import Outbox
from tidegate.auth.secrets import Sealer, load_server_secret
from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.models import AlertDelivery, AlertState

VIEWS = "/v1/config/view"


@dataclass
class Harness:
    client: AppClient
    lifespan: Any
    settings: Settings
    db: Database
    sealer: Sealer
    who: Ingestor
    clock: HandClock
    shared: Evaluator | None = None
    outboxes: list[Outbox] = field(default_factory=list)

    def main_evaluator(self) -> Evaluator:
        """One evaluator kept for the test (another would wait for its lease)."""
        if self.shared is None:
            self.shared = self.evaluator()
        return self.shared

    def evaluator(self, clock: Any = None) -> Evaluator:
        return Evaluator(
            self.db, self.sealer, self.settings, owner=uuid.uuid4().hex, clock=clock or self.clock
        )

    def outbox(self) -> Outbox:
        outbox = Outbox(self.db, self.sealer, self.settings, clock=self.clock)
        self.outboxes.append(outbox)  # their HTTP clients are closed with the harness
        return outbox

    async def view(self, channels: list[dict[str, Any]], **fields: Any) -> str:
        body = {"name": "Payments errors", "query": "payment failed", "channels": channels}
        response = await self.client.post(
            VIEWS, json={**body, **fields}, headers=self.who.account.headers
        )
        assert response.status_code == 200, response.text
        return str(response.json()["viewID"])

    async def ingest(
        self, *lines: str, app: str = "api", hostname: str = "web-1", timestamp: int | None = None
    ) -> None:
        """``timestamp``: the lines' own time (ms), else the time they arrive."""
        stamp = {} if timestamp is None else {"timestamp": timestamp}
        response = await self.client.post(
            "/logs/ingest",
            params={"hostname": hostname},
            json={
                "lines": [{"line": text, "app": app, "level": "error", **stamp} for text in lines]
            },
            headers=self.who.headers,
        )
        assert response.status_code == 200, response.text

    async def deliveries(self) -> list[AlertDelivery]:
        async with self.db.read_sessions() as session:
            rows = await session.execute(
                select(AlertDelivery).order_by(AlertDelivery.fired_ms, AlertDelivery.id)
            )
            return list(rows.scalars())

    async def states(self) -> list[dict[str, Any]]:
        async with self.db.read_sessions() as session:
            rows = await session.execute(select(AlertState.state))
            return [dict(state) for state in rows.scalars()]

    async def close(self) -> None:
        for outbox in self.outboxes:
            await outbox.close()
        await self.client.aclose()
        await self.lifespan.__aexit__(None, None, None)
        await self.db.dispose()


def mailing(smtp_port: int) -> dict[str, Any]:
    """Settings that send the alerts' e-mail to a test's SMTP receiver."""
    return {"smtp_host": "127.0.0.1", "smtp_port": smtp_port, "smtp_from": "alerts@tidegate.test"}


async def open_harness(database_url: str, data_dir: Path, **overrides: Any) -> Harness:
    settings = make_settings(
        database_url,
        data_dir,
        alerts_enabled=False,
        alert_settle_s=0,
        destination_allow="127.0.0.1",
        **overrides,
    )
    client, lifespan = await open_client(settings)
    who = await make_ingestor(client)
    sealer = Sealer(load_server_secret(configured=settings.secret_key, data_dir=data_dir))
    return Harness(
        client=client,
        lifespan=lifespan,
        settings=settings,
        db=Database.connect(database_url),
        sealer=sealer,
        who=who,
        clock=HandClock(),
    )
