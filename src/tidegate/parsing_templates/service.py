"""Parsing template rules: patterns that compile, the account's limits, order and state.
No HTTP. docs/line-parsing.md, "Custom templates".

A template applies to the lines ingested after it is made active (every worker reads the
change on its next batch: ``logs.exclusion.RuleCache``'s fingerprint covers templates);
lines stored before keep the fields they were stored with.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncSession

from tidegate.auth.scope import AccessScope, scoped_query
from tidegate.auth.secrets import Sealer
from tidegate.clock import epoch_ms_of, now_ms
from tidegate.db.engine import Database
from tidegate.errors import NotFound, ValidationFailed
from tidegate.export import schemas as export_schemas
from tidegate.export.service import page_of_lines
from tidegate.logs.parsing import MAX_PARSED_CHARS
from tidegate.logs.reading import PageReader, run_off_loop
from tidegate.logs.templates import TemplateSet
from tidegate.logs.timestamps import text_time
from tidegate.models import ParsingTemplate
from tidegate.models.base import utcnow
from tidegate.parsing_templates import repository, schemas
from tidegate.processing.grok import TemplatePattern, TemplatePatternError

# Every active template is tried on every line that the ones before it do not match:
# the active count bounds the per-line work (docs/line-parsing.md, "Cost").
MAX_TEMPLATES: Final = 100
MAX_ACTIVE: Final = 10
ACTIVE: Final = "active"
# The preview reads the account's latest lines of this window, newest first.
PREVIEW_WINDOW_MS: Final = 7 * 24 * 3600 * 1000


def _invalid(message: str) -> ValidationFailed:
    return ValidationFailed(message, context="body")


def compile_pattern(pattern: str) -> TemplatePattern:
    """The compiled pattern, or ValidationFailed (400) saying what is wrong with it."""
    try:
        return TemplatePattern(pattern)
    except TemplatePatternError as error:
        raise _invalid(f"pattern: {error}") from None


# How many patterns' field names are kept (a few KB each at most).
FIELD_NAMES_CACHED: Final = 1024


@functools.lru_cache(maxsize=FIELD_NAMES_CACHED)
def _field_names(pattern: str) -> tuple[str, ...]:
    """The fields ``pattern`` captures, in order (none when it no longer compiles).
    Compiling a pattern costs tens of microseconds and the names depend on its text and
    the fixed Grok library only, so a read of the templates compiles each text once."""
    try:
        return tuple(TemplatePattern(pattern).field_names)
    except TemplatePatternError:
        return ()


def template_data(template: ParsingTemplate | Any) -> dict[str, Any]:
    """The template's document as plain data (api/raw_json.py), from the ORM object or a
    raw record (``repository.template_records``)."""
    fields = list(_field_names(template.pattern))
    return {
        "id": template.id,
        "name": template.name,
        "pattern": template.pattern,
        "state": template.state,
        "position": template.position,
        "fields": fields,
        "activated_at": (
            epoch_ms_of(template.activated_at) if template.activated_at is not None else None
        ),
        "matched_lines": template.match_count or 0,
        "last_matched_at": template.last_matched_ms,
        "created_at": epoch_ms_of(template.created_at),
        "updated_at": epoch_ms_of(template.updated_at),
    }


def template_schema(template: ParsingTemplate) -> schemas.ParsingTemplate:
    return schemas.ParsingTemplate(**template_data(template))


def _set_state(template: ParsingTemplate, state: str, *, active_count: int) -> None:
    """Moves ``template`` to ``state``; becoming active stamps ``activated_at`` and
    counts against ``MAX_ACTIVE`` (``active_count``: the account's active ones now)."""
    if state == template.state:
        return
    if state == ACTIVE:
        if active_count >= MAX_ACTIVE:
            raise _invalid(f"state: at most {MAX_ACTIVE} templates may be active at once")
        template.activated_at = utcnow()
    template.state = state


async def create_template(
    *, session: AsyncSession, account_id: str, body: schemas.ParsingTemplateCreate
) -> schemas.ParsingTemplate:
    compile_pattern(body.pattern)
    count, active, position = await repository.counts_of(session=session, account_id=account_id)
    if count >= MAX_TEMPLATES:
        raise _invalid(f"an account has at most {MAX_TEMPLATES} parsing templates")
    now = utcnow()
    template = ParsingTemplate(
        account_id=account_id,
        name=body.name,
        pattern=body.pattern,
        state="draft",
        position=position,
        created_at=now,
        updated_at=now,
    )
    _set_state(template, body.state, active_count=active)
    session.add(template)
    await session.flush()
    return template_schema(template)


async def list_templates(*, db: Database, account_id: str) -> list[dict[str, Any]]:
    """The account's templates, in the order they are tried, as plain data: one raw read."""
    return [
        template_data(template)
        for template in await repository.template_records(db=db, account_id=account_id)
    ]


async def _own(
    *, session: AsyncSession, account_id: str, template_id: str, for_update: bool = False
) -> ParsingTemplate:
    template = await repository.template_of(
        session=session, account_id=account_id, template_id=template_id, for_update=for_update
    )
    if template is None:
        raise NotFound()
    return template


async def read_template(*, db: Database, account_id: str, template_id: str) -> dict[str, Any]:
    """The template's document as plain data, from one raw read; another account's
    template, or none, is the same 404."""
    template = await repository.template_record(
        db=db, account_id=account_id, template_id=template_id
    )
    if template is None:
        raise NotFound()
    return template_data(template)


async def update_template(
    *,
    session: AsyncSession,
    account_id: str,
    template_id: str,
    body: schemas.ParsingTemplateUpdate,
) -> schemas.ParsingTemplate:
    template = await _own(
        session=session, account_id=account_id, template_id=template_id, for_update=True
    )
    if body.pattern is not None:
        compile_pattern(body.pattern)
        if body.pattern != template.pattern:  # the counts are the pattern's
            template.match_count, template.last_matched_ms = 0, None
        template.pattern = body.pattern
    if body.name is not None:
        template.name = body.name
    if body.state is not None and body.state != template.state:
        _, active, _ = await repository.counts_of(session=session, account_id=account_id)
        _set_state(template, body.state, active_count=active)
    template.updated_at = utcnow()
    await session.flush()
    return template_schema(template)


async def activate_template(
    *, session: AsyncSession, account_id: str, template_id: str
) -> schemas.ParsingTemplate:
    return await update_template(
        session=session,
        account_id=account_id,
        template_id=template_id,
        body=schemas.ParsingTemplateUpdate(state=ACTIVE),
    )


async def delete_template(
    *, session: AsyncSession, account_id: str, template_id: str
) -> schemas.ParsingTemplate:
    template = await _own(
        session=session, account_id=account_id, template_id=template_id, for_update=True
    )
    deleted = template_schema(template)
    await session.delete(template)
    await session.flush()
    return deleted


async def reorder_templates(
    *, session: AsyncSession, account_id: str, body: schemas.ParsingTemplateOrder
) -> list[schemas.ParsingTemplate]:
    """Puts the account's templates in the order of ``body.ids``, which must name each
    of them exactly once."""
    templates = await repository.templates_of(
        session=session, account_id=account_id, for_update=True
    )
    by_id = {template.id: template for template in templates}
    if len(set(body.ids)) != len(body.ids):
        raise _invalid("ids: an id is given more than once")
    if set(body.ids) != set(by_id):
        raise _invalid("ids: give every template id of the account exactly once")
    now = utcnow()
    for position, template_id in enumerate(body.ids):
        template = by_id[template_id]
        template.position = position
        template.updated_at = now
    await session.flush()
    return [template_schema(by_id[template_id]) for template_id in body.ids]


# An active template tried before the previewed one: (id, name, its pattern).
Earlier = tuple[str, str, TemplatePattern]


def _preview_line(
    templates: TemplateSet, earlier: list[Earlier], record: dict[str, Any]
) -> schemas.PreviewLine:
    text = record["_line"]
    parseable = len(text) <= MAX_PARSED_CHARS
    line = schemas.PreviewLine(
        line=text,
        ts=record.get("_ts"),
        host=record.get("_host"),
        app=record.get("_app"),
        matched=False,
    )
    if not parseable:
        return line
    for template_id, name, pattern in earlier:
        if pattern.fields(text) is not None:
            line.taken_by = schemas.TemplateRef(id=template_id, name=name)
            return line
    parsed = templates.parse(text)
    if parsed is not None:
        line.matched, line.fields, line.level = True, parsed.fields, parsed.level
        if parsed.app or parsed.host or parsed.time is not None:
            near = record.get("_ts")
            line.sets = schemas.LineSets(
                app=parsed.app,
                host=parsed.host,
                ts=(
                    text_time(parsed.time, near_ms=near if near is not None else now_ms())
                    if parsed.time is not None
                    else None
                ),
            )
    return line


def _preview(
    pattern: TemplatePattern, earlier: list[Earlier], records: list[dict[str, Any]]
) -> schemas.ParsingTemplatePreviewResult:
    templates = TemplateSet([pattern])
    lines = [_preview_line(templates, earlier, record) for record in records]
    return schemas.ParsingTemplatePreviewResult(
        fields=pattern.field_names,
        total=len(lines),
        matched=sum(line.matched for line in lines),
        taken=sum(line.taken_by is not None for line in lines),
        lines=lines,
    )


async def _earlier(
    *, session: AsyncSession, account_id: str, template_id: str | None
) -> list[Earlier]:
    """The account's active templates that ingestion tries before ``template_id`` (all of
    them for a template not saved yet: a new one goes last), in their order."""
    rows = await repository.templates_of(session=session, account_id=account_id)
    if template_id is not None:
        ids = [row.id for row in rows]
        if template_id not in ids:
            raise NotFound()
        rows = rows[: ids.index(template_id)]
    earlier = []
    for row in rows:
        if row.state != ACTIVE:
            continue
        try:
            earlier.append((row.id, row.name, TemplatePattern(row.pattern)))
        except TemplatePatternError:
            continue  # left out of ingestion too (TemplateSet.from_rows)
    return earlier


async def preview_template(
    *,
    database: Database,
    session: AsyncSession,
    sealer: Sealer,
    account_id: str,
    scope: AccessScope | None,
    body: schemas.ParsingTemplatePreview,
) -> schemas.ParsingTemplatePreviewResult:
    """An unsaved pattern tried on ``body.lines``, or on the account's ``body.size``
    latest lines (those the caller may read: its group scope applies, as in export),
    with the fields each would be stored with, after the active templates ingestion
    tries before it (``_earlier``): a line one of them takes never reaches it. Runs in
    an export worker thread."""
    pattern = compile_pattern(body.pattern)
    earlier = await _earlier(session=session, account_id=account_id, template_id=body.id)
    if body.lines is not None:
        records = [{"_line": text} for text in body.lines]
        return await asyncio.to_thread(_preview, pattern, earlier, records)
    now = now_ms()
    request = export_schemas.parse_export_request(
        from_=str(now - PREVIEW_WINDOW_MS),
        to=str(now),
        size=str(body.size),
        hosts=None,
        apps=None,
        levels=None,
        query=scoped_query(None, scope),
        prefer="tail",
        pagination_id=None,
    )

    def latest(reader: PageReader) -> schemas.ParsingTemplatePreviewResult:
        page = page_of_lines(reader=reader, sealer=sealer, account_id=account_id, request=request)
        return _preview(pattern, earlier, page["lines"])

    return await run_off_loop(
        database=database, session=session, account_id=account_id, page=latest
    )
