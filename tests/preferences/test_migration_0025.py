"""Migration 0025 (``user_preferences.starred``) on a database holding a person's
preferences, on SQLite and PostgreSQL: kept preferences get no starred search, what
they held stays as it was, and it downgrades too."""

from __future__ import annotations

import json
from pathlib import Path

from tests.logs.test_migration_0019 import _execute, account_of_a_new_database, empty_db
from tests.pipelines.test_migration_0008 import downgrade
from tests.users.factories import add_person

from tidegate.db.migrate import upgrade_database

__all__ = ["empty_db"]


async def test_preferences_kept_before_0025_have_no_starred_search(
    empty_db: str, tmp_path: Path
) -> None:
    account = await account_of_a_new_database(empty_db, tmp_path)
    person = await add_person(empty_db, account_id=account.account_id)
    await downgrade(empty_db, "0024")
    history = [{"query": "level:error", "range": "2h"}, "plain"]
    await _execute(
        empty_db,
        "INSERT INTO user_preferences (user_id, utc, query_history, updated_at) "
        "VALUES (:user, :utc, :history, CURRENT_TIMESTAMP)",
        user=person.user_id,
        utc=True,
        history=json.dumps(history),
    )
    await upgrade_database(empty_db)
    [(utc, kept, starred)] = await _execute(
        empty_db,
        "SELECT utc, CAST(query_history AS TEXT), CAST(starred AS TEXT) FROM user_preferences",
    )
    assert bool(utc) is True
    assert json.loads(str(kept)) == history
    assert json.loads(str(starred)) == []
    await downgrade(empty_db, "0024")
    assert await _execute(empty_db, "SELECT user_id FROM user_preferences") == [(person.user_id,)]
