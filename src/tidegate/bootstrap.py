"""First start: an empty database gets a default enterprise, and its key is written to
a file only the user can read, so that the README's first curl line works."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import func, select

from tidegate.db.engine import Database
from tidegate.enterprise.service import create_enterprise
from tidegate.models import Enterprise

TOKEN_FILE = "enterprise-key"


async def bootstrap_default_enterprise(*, database_url: str, data_dir: Path) -> Path | None:
    """Create the default enterprise if there is none. Returns the key file if written."""
    db = Database.connect(database_url)
    try:
        async with db.write_sessions() as session:
            count = (
                await session.execute(select(func.count()).select_from(Enterprise))
            ).scalar_one()
            if count:
                return None
            _enterprise, token = await create_enterprise(session=session, name="default")
            path = data_dir / TOKEN_FILE
            data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(token + "\n")
            await session.commit()
            return path
    finally:
        await db.dispose()
