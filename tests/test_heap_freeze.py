"""A served worker moves its start-up objects out of the garbage collector's reach once
started (``app.freeze_start_up_heap``; docs/line-parsing.md, "Cost"): the in-process
apps of the tests do not (they start and stop many times in one process)."""

from __future__ import annotations

import gc
from pathlib import Path

from tests.conftest import make_settings

from tidegate.app import create_app
from tidegate.db.migrate import upgrade_database


async def test_a_served_worker_freezes_what_it_holds_once_started(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'freeze.sqlite3'}"
    await upgrade_database(url)
    for freeze, frozen in ((False, False), (True, True)):
        gc.unfreeze()
        app = create_app(make_settings(url, tmp_path), freeze_heap=freeze)
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        try:
            assert (gc.get_freeze_count() > 0) is frozen
        finally:
            gc.unfreeze()  # the test process's objects go back to the collector
            await lifespan.__aexit__(None, None, None)
