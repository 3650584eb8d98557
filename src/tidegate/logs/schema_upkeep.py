"""The log store's part of bringing a database up to date (the CLI's, at start and in
``tidegate db upgrade``/``reindex``): the schema by the migrations, then the search index
folded under this Python's Unicode version."""

from __future__ import annotations

from tidegate.db.migrate import SecretSealer, in_one_transaction, upgrade_database
from tidegate.logs.search_index import refresh_if_stale, reindex


async def upgrade_log_store(url: str, *, sealer: SecretSealer | None = None) -> None:
    """Migrate to the newest schema and rebuild a search index folded under another
    Unicode version, in the migration's transaction (``sealer``: see
    ``upgrade_database``)."""
    await upgrade_database(url, then=refresh_if_stale, sealer=sealer)


async def reindex_database(url: str, *, sealer: SecretSealer | None = None) -> int:
    """Rebuild the search text of every line (``tidegate db reindex``); how many lines.
    One transaction: searches see the old index until it commits."""
    await upgrade_log_store(url, sealer=sealer)
    return await in_one_transaction(url, reindex)
