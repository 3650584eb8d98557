"""Segments in an S3-compatible bucket (docs/log-store.md, "Segments in object storage"),
against moto in server mode (real HTTP): the compactor on "host A" (one data directory)
uploads each segment; "host B" (another data directory, its cache empty, the same
database) reads exactly the same answers; retention deletes the objects; an object no
segment names is swept; the cache keeps to its bound; concurrent reads of a missing
copy download it once; an upload that fails leaves the lines in the row store."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from tests.aggregate.helpers import HOUR_MS, HOUR_START
from tests.components.receiver import Receiver, Request
from tests.conftest import BACKENDS, AppClient, DatabaseTemplates, make_settings, running_client
from tests.export.helpers import now_ms
from tests.factories import AccountCtx, make_account, make_tenant
from tests.logs.test_segment_index import NEEDLES, needle_lines
from tests.logs.test_segments import (
    DAY_MS,
    generated_lines,
    segment_paths,
    store,
    tier_counts,
    walk,
)
from tests.objectstore.moto_server import (
    ACCESS_KEY_ID,
    SECRET_ACCESS_KEY,
    MotoServer,
    moto_server,  # noqa: F401  (the session's server)
)

from tidegate.config import Settings
from tidegate.db.engine import Database
from tidegate.ingest.retention import sweep
from tidegate.logs.compactor import CompactorConfig, compact_round, release
from tidegate.logs.segment_cache import SegmentCache, attach_segment_storage
from tidegate.logs.segment_objects import SegmentBucket
from tidegate.logs.segments import SegmentMissing, missing_file, stored_files
from tidegate.models import LogSegment
from tidegate.objectstore.s3 import S3Target, signed_headers

PREFIX = "tidegate/segments"
QUERIES = [None, "quarantined", "level:error app:web", '"connection reset by peer"', "host:web*"]


@pytest.fixture(params=BACKENDS)
async def database_url(
    request: pytest.FixtureRequest, database_templates: DatabaseTemplates
) -> AsyncIterator[str]:
    url = await database_templates.fresh(request.param)
    try:
        yield url
    finally:
        await database_templates.drop(url)


@dataclass(frozen=True)
class Hosts:
    """Hosts sharing one database and one bucket, each with a data directory of its own."""

    url: str
    moto: MotoServer
    bucket: str
    root: Path

    def settings(self, name: str, **overrides: Any) -> Settings:
        bucket_settings = {
            "segment_s3_bucket": self.bucket,
            "segment_s3_prefix": PREFIX,
            "segment_s3_endpoint": self.moto.endpoint,
            "segment_s3_access_key_id": ACCESS_KEY_ID,
            "segment_s3_secret_access_key": SECRET_ACCESS_KEY,
        }
        return make_settings(self.url, self.root / name, **{**bucket_settings, **overrides})

    async def objects(self) -> list[str]:
        """The names of the bucket's objects under the prefix."""
        keys = await asyncio.to_thread(self.moto.keys, self.bucket)
        return sorted(key.removeprefix(PREFIX + "/") for key in keys)

    async def old_account(
        self,
        client: AppClient,
        *,
        lines: int,
        seed: int,
        in_time_order: bool = False,
        **fields: Any,
    ) -> AccountCtx:
        """A new account with ``lines`` lines received ten days ago (old enough)."""
        account = await make_account(client, await make_tenant(self.url), **fields)
        stored = generated_lines(lines, seed=seed)
        if in_time_order:
            stored.sort(key=lambda line: line.ts)
        await store(self.url, account.account_id, stored, now_ms() - 10 * DAY_MS)
        return account


@pytest.fixture
async def hosts(
    database_url: str,
    moto_server: MotoServer,  # noqa: F811
    tmp_path: Path,
) -> Hosts:
    bucket = await asyncio.to_thread(moto_server.make_bucket, f"seg-{uuid.uuid4().hex[:12]}")
    return Hosts(database_url, moto_server, bucket, tmp_path)


async def compact(settings: Settings, *, rounds: int = 1_000, **config: Any) -> list[Any]:
    """Compactor rounds as ``settings``' host, until one moves nothing (or ``rounds``)."""
    db = Database.connect(settings.database_url)
    attach_segment_storage(db, settings)
    cfg = dataclasses.replace(CompactorConfig.of(settings), **config)
    owner = uuid.uuid4().hex
    results = []
    try:
        for _ in range(rounds):
            result = await compact_round(db, cfg, owner=owner)
            assert result.claimed
            results.append(result)
            if result.segments == 0:
                break
        await release(db, owner=owner)
        return results
    finally:
        await db.dispose()


def copies(root: Path) -> list[str]:
    return sorted(name for name, _ in stored_files(root))


def cache_of(client: AppClient) -> SegmentCache:
    cache = client._transport.app.state.tidegate.db.segment_cache  # type: ignore[attr-defined]
    assert isinstance(cache, SegmentCache)
    return cache


async def answers(client: AppClient, account: AccountCtx) -> dict[str, Any]:
    """Export walks both ways in small pages, and the aggregation, of each query."""
    found: dict[str, Any] = {}
    for query in QUERIES:
        head = await walk(client, account, query=query, prefer="head", size=19)
        tail = await walk(client, account, query=query, prefer="tail", size=23)
        params: dict[str, Any] = {"from": HOUR_START, "to": HOUR_START + HOUR_MS - 1, "top": 5}
        if query is not None:
            params["query"] = query
        response = await client.get("/v1/aggregate", params=params, headers=account.headers)
        assert response.status_code == 200, response.text
        found[str(query)] = {"head": head, "tail": tail, "aggregate": response.json()}
    return found


async def test_host_b_reads_what_host_a_compacted(hosts: Hosts) -> None:
    url = hosts.url
    a, b = hosts.settings("a"), hosts.settings("b")
    async with running_client(a) as host_a, running_client(b) as host_b:
        account = await make_account(host_a, await make_tenant(url))
        lines = generated_lines(200, seed=23)
        now = now_ms()
        await store(url, account.account_id, lines[:140], now - 10 * DAY_MS)
        await store(url, account.account_id, lines[140:], now - 2 * 3_600_000)
        hot = await answers(host_a, account)
        assert sum(len(found["head"]) for found in hot.values()) > 200

        results = await compact(a, after_ms=DAY_MS, window_ms=3_600_000, max_lines=29)
        assert sum(result.segments for result in results) >= 5
        assert await tier_counts(url, account.account_id) == (60, 140)
        names = await segment_paths(url, account.account_id)
        # Each segment is an object of the bucket, and host A's copy.
        assert await hosts.objects() == sorted(names)
        assert copies(a.segment_cache_directory) == sorted(names)
        assert not b.segment_cache_directory.exists()

        # Host B has no copy and no segment directory: it downloads what it reads.
        assert await answers(host_b, account) == hot
        assert copies(b.segment_cache_directory) == sorted(names)
        assert cache_of(host_b).downloads == len(names)
        # Host A read its own copies.
        assert await answers(host_a, account) == hot
        assert cache_of(host_a).downloads == 0

        # Context from host B too, around a line now in a segment.
        first = hot["None"]["head"][0]["_id"]
        contexts = []
        for client in (host_a, host_b):
            response = await client.get(
                "/v1/export/context",
                params={"line": first, "before": 2, "after": 2},
                headers=account.headers,
            )
            assert response.status_code == 200, response.text
            contexts.append(response.json())
        assert contexts[0] == contexts[1]


async def test_host_b_downloads_only_the_segments_the_index_leaves(hosts: Hosts) -> None:
    """A search for a literal opens only the segments whose index says they may hold it
    (docs/log-store.md, "The segment index"): host B downloads nothing else."""
    a = hosts.settings("a")
    lines = needle_lines()
    async with running_client(a) as host_a:
        account = await make_account(host_a, await make_tenant(hosts.url))
        await store(hosts.url, account.account_id, lines, now_ms() - 10 * DAY_MS)
        hot = {query: await walk(host_a, account, query=query) for query in NEEDLES}
    # Six segments of 20 lines; the needles are in the first, the fourth and the sixth.
    await compact(a, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=20, row_group_lines=8)
    names = await segment_paths(hosts.url, account.account_id)
    assert len(names) == 6
    async with running_client(hosts.settings("b")) as host_b:
        cache = cache_of(host_b)
        for downloaded, (query, place) in enumerate(NEEDLES.items(), start=1):
            found = await walk(host_b, account, query=query)
            assert found == hot[query]
            assert [line["_line"] for line in found] == [lines[place].line]
            response = await host_b.get(
                "/v1/aggregate",
                params={"from": HOUR_START, "to": HOUR_START + HOUR_MS - 1, "query": query},
                headers=account.headers,
            )
            assert response.status_code == 200, response.text
            assert response.json()["total"] == 1
            assert copies(hosts.settings("b").segment_cache_directory) == sorted(
                names[index // 20] for index in list(NEEDLES.values())[:downloaded]
            )
            assert cache.downloads == downloaded
        # Without a literal, every segment is read.
        assert len(await walk(host_b, account)) == len(lines)
        assert cache.downloads == len(names)


async def test_retention_deletes_the_objects_and_the_copies(hosts: Hosts) -> None:
    a = hosts.settings("a")
    async with running_client(a) as host_a:
        account = await hosts.old_account(host_a, lines=60, seed=5, retention=3)
        keep = await hosts.old_account(host_a, lines=30, seed=6)
        await compact(a, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=25)
        dropped = await segment_paths(hosts.url, account.account_id)
        kept = await segment_paths(hosts.url, keep.account_id)
        assert (len(dropped), len(kept)) == (3, 2)
        assert await hosts.objects() == sorted(dropped + kept)

        db = Database.connect(hosts.url)
        attach_segment_storage(db, a)
        try:
            assert await sweep(db=db, now_ms=now_ms(), account_ids=[account.account_id]) == 60
        finally:
            await db.dispose()
        assert await segment_paths(hosts.url, account.account_id) == []
        assert await hosts.objects() == sorted(kept)
        assert copies(a.segment_cache_directory) == sorted(kept)
        assert len(await walk(host_a, keep, prefer="head")) == 30


async def test_objects_no_segment_names_are_swept(hosts: Hosts) -> None:
    a = hosts.settings("a")
    async with running_client(a) as host_a:
        account = await hosts.old_account(host_a, lines=40, seed=8)
        await compact(a, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=100)
        (registered,) = await segment_paths(hosts.url, account.account_id)
        # A move that crashed between its upload and its commit left an object; the
        # bucket also holds a key that is no segment's, which is left alone.
        client = hosts.moto.client()
        orphan = f"{account.account_id}/{HOUR_START}-1-0123456789abcdef.parquet"
        for key in (orphan, "notes.txt"):
            await asyncio.to_thread(
                client.put_object, Bucket=hosts.bucket, Key=f"{PREFIX}/{key}", Body=b"x"
            )
        assert await hosts.objects() == sorted([registered, orphan, "notes.txt"])
        (result,) = await compact(a, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=100)
        assert result.orphans_removed == 1
        assert await hosts.objects() == sorted([registered, "notes.txt"])
        assert len(await walk(host_a, account, prefer="head")) == 40


async def test_uploads_left_in_progress_are_aborted(hosts: Hosts) -> None:
    """A process that crashed while uploading a large segment (a multipart upload) left
    its parts in the bucket: the next round aborts the upload. Uploads of keys that are
    no segment's, or outside the prefix, are left alone."""
    a = hosts.settings("a")
    client = hosts.moto.client()
    segment = f"{PREFIX}/acct1/{HOUR_START}-1-0123456789abcdef.parquet"
    kept = [f"{PREFIX}/notes.txt", f"elsewhere/acct1/{HOUR_START}-1.parquet"]

    def start(key: str) -> None:
        upload = client.create_multipart_upload(Bucket=hosts.bucket, Key=key)
        client.upload_part(
            Bucket=hosts.bucket, Key=key, UploadId=upload["UploadId"], PartNumber=1, Body=b"x"
        )

    def in_progress() -> list[str]:
        listed = client.list_multipart_uploads(Bucket=hosts.bucket)
        return sorted(upload["Key"] for upload in listed.get("Uploads", []))

    for key in (segment, segment, *kept):
        await asyncio.to_thread(start, key)
    assert await asyncio.to_thread(in_progress) == sorted([segment, segment, *kept])
    (result,) = await compact(a, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=100)
    assert result.uploads_aborted == 2
    assert await asyncio.to_thread(in_progress) == sorted(kept)
    (result,) = await compact(a, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=100)
    assert result.uploads_aborted == 0


def test_ambient_credentials_are_signed_with_their_session_token() -> None:
    target = S3Target("http://127.0.0.1:9", "bucket", "us-east-1", "", "")
    url = target.url("a/b.parquet")
    signed = dict(signed_headers(target, "GET", url, b"", (), ("ASIAKEY", "secret", "tok")))
    assert signed["X-Amz-Security-Token"] == "tok"
    assert "Credential=ASIAKEY/" in signed["Authorization"]
    assert "x-amz-security-token" in signed["Authorization"]  # signed, not only sent


async def test_a_bucket_without_keys_uses_the_default_credential_chain(
    hosts: Hosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No keys set: the AWS default credential chain's, here from an ECS-style container
    credentials endpoint (a real HTTP server on 127.0.0.1), temporary ones with a
    session token; moto accepts them and the segments go up and are read back."""
    credentials = {
        "AccessKeyId": "ASIATIDEGATETEST",
        "SecretAccessKey": "temporary-secret",
        "Token": "temporary-session-token",
        "Expiration": "2099-01-01T00:00:00Z",
    }
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    a = hosts.settings("a", segment_s3_access_key_id="", segment_s3_secret_access_key="")
    async with Receiver(answer=json.dumps(credentials).encode()) as endpoint:
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", f"{endpoint.base}/creds")
        async with running_client(a) as host_a:
            account = await hosts.old_account(host_a, lines=30, seed=12)
            before = await walk(host_a, account, prefer="head")
            results = await compact(a, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=100)
            assert sum(result.segments for result in results) == 1
            assert not any(result.bucket_failed for result in results)
            assert await hosts.objects() == await segment_paths(hosts.url, account.account_id)
            assert await tier_counts(hosts.url, account.account_id) == (0, 30)
            assert await walk(host_a, account, prefer="head") == before
        assert [request.target for request in endpoint.requests][:1] == ["/creds"]


def refusing_uploads(request: Request) -> tuple[int, bytes]:
    """An S3 API that lists an empty bucket and refuses every write."""
    if request.method == "GET":
        return 200, b"<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>"
    return 403, b"<Error><Code>AccessDenied</Code></Error>"


async def test_a_failed_upload_leaves_the_lines_in_the_row_store(hosts: Hosts) -> None:
    bucket = f"seg-{uuid.uuid4().hex[:12]}"  # not made yet
    a = hosts.settings("a", segment_s3_bucket=bucket)
    async with running_client(a) as host_a:
        account = await hosts.old_account(host_a, lines=50, seed=9)
        before = await walk(host_a, account, prefer="head")

        async def nothing_moved() -> None:
            assert await tier_counts(hosts.url, account.account_id) == (50, 0)
            assert copies(a.segment_cache_directory) == []
            assert await walk(host_a, account, prefer="head") == before

        # No bucket: the round's sweep fails, nothing moves.
        (result,) = await compact(a, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=20)
        assert result.bucket_failed
        assert (result.segments, result.lines) == (0, 0)
        await nothing_moved()

        # A store that lists but refuses the upload: the file written is removed, the
        # lines stay in the row store, and nothing is registered.
        async with Receiver(respond=refusing_uploads) as refusing:
            (result,) = await compact(
                a.with_overrides(segment_s3_endpoint=refusing.base),
                after_ms=DAY_MS,
                window_ms=DAY_MS,
                max_lines=20,
            )
        assert result.bucket_failed
        assert (result.segments, result.dropped) == (0, 0)
        # The listings (objects, uploads in progress), then the refused upload.
        assert [request.method for request in refusing.requests] == ["GET", "GET", "PUT"]
        await nothing_moved()

        # The bucket is there now: the next rounds move them.
        await asyncio.to_thread(hosts.moto.make_bucket, bucket)
        results = await compact(a, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=20)
        assert sum(result.segments for result in results) == 3
        assert await tier_counts(hosts.url, account.account_id) == (0, 50)
        assert len(await asyncio.to_thread(hosts.moto.keys, bucket)) == 3
        assert await walk(host_a, account, prefer="head") == before


async def test_the_cache_keeps_to_its_bound(hosts: Hosts) -> None:
    a = hosts.settings("a")
    async with running_client(a) as host_a:
        # In time order: each segment holds a span of the hour, and a page reads few.
        account = await hosts.old_account(host_a, lines=240, seed=4, in_time_order=True)
        before = await walk(host_a, account, prefer="head", size=25)
        await compact(a, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=20)
    db = Database.connect(hosts.url)
    try:
        async with db.read_sessions() as session:
            sizes = list(
                (
                    await session.execute(
                        select(LogSegment.bytes).where(LogSegment.account_id == account.account_id)
                    )
                ).scalars()
            )
    finally:
        await db.dispose()
    assert len(sizes) >= 12
    # Room for about three segments of the dozen and more.
    bound = 3 * max(sizes)
    b = hosts.settings("b", segment_cache_bytes=bound)
    async with running_client(b) as host_b:
        cache = cache_of(host_b)
        assert await walk(host_b, account, prefer="head", size=25) == before
        assert cache.size() <= bound
        assert len(copies(b.segment_cache_directory)) < len(sizes)
        assert await walk(host_b, account, prefer="tail", size=25) == before[::-1]
        assert cache.size() <= bound
        # What was evicted was downloaded again: more downloads than segments.
        assert cache.downloads > len(sizes)


async def test_concurrent_reads_of_a_missing_copy_download_it_once(hosts: Hosts) -> None:
    a = hosts.settings("a")
    async with running_client(a) as host_a:
        account = await hosts.old_account(host_a, lines=30, seed=2)
    await compact(a, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=100)
    (name,) = await segment_paths(hosts.url, account.account_id)
    b = hosts.settings("b")
    segment_bucket = SegmentBucket.of(b)
    assert segment_bucket is not None
    cache = SegmentCache(b.segment_cache_directory, max_bytes=10**9, bucket=segment_bucket)
    start = threading.Barrier(6)
    paths: list[Path] = []

    def read() -> None:
        with cache.reading() as fetch:
            start.wait()
            paths.append(fetch(name))

    threads = [threading.Thread(target=read) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        await asyncio.to_thread(thread.join)
    assert paths == [b.segment_cache_directory / name] * 6
    assert cache.downloads == 1
    assert (a.segment_cache_directory / name).read_bytes() == paths[0].read_bytes()

    # An object retention deleted after a read listed its segment: the read starts over.
    def read_dropped() -> None:
        with cache.reading() as fetch:
            fetch(f"{account.account_id}/{HOUR_START}-1-00.parquet")

    with pytest.raises(SegmentMissing) as missing:
        await asyncio.to_thread(read_dropped)
    assert missing_file(missing.value)


async def test_a_bucket_that_cannot_be_read_answers_503(hosts: Hosts) -> None:
    a = hosts.settings("a")
    async with running_client(a) as host_a:
        account = await hosts.old_account(host_a, lines=30, seed=3)
    await compact(a, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=100)
    denied = b"<Error><Code>AccessDenied</Code></Error>"
    async with Receiver(script=[403], answer=denied) as refusing:
        # Host B's S3 API refuses every download.
        async with running_client(hosts.settings("b", segment_s3_endpoint=refusing.base)) as b:
            response = await b.get(
                "/v2/export",
                params={"from": HOUR_START, "to": HOUR_START + HOUR_MS - 1},
                headers=account.headers,
            )
        assert response.status_code == 503, response.text
        assert "segment store" in response.text
        assert [request.method for request in refusing.requests] == ["GET"]


def test_a_bucket_needs_both_keys_or_none_and_its_own_cache_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="go together"):
        Settings(data_dir=tmp_path, segment_s3_bucket="segments", segment_s3_access_key_id="k")
    bucket = SegmentBucket.of(Settings(data_dir=tmp_path, segment_s3_bucket="segments"))
    assert bucket is not None
    assert bucket.target.ambient is not None  # no keys: the default credential chain
    with pytest.raises(ValueError, match="must not be TIDEGATE_SEGMENT_DIR"):
        Settings(
            data_dir=tmp_path,
            segment_s3_bucket="segments",
            segment_s3_access_key_id="k",
            segment_s3_secret_access_key="s",
            segment_dir=tmp_path / "x",
            segment_cache_dir=tmp_path / "x",
        )


async def test_segments_written_before_the_bucket_are_uploaded(hosts: Hosts) -> None:
    local = make_settings(hosts.url, hosts.root / "a")
    async with running_client(local) as host_a:
        account = await hosts.old_account(host_a, lines=90, seed=11)
        before = await walk(host_a, account, prefer="head", size=31)
    await compact(local, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=30)
    names = await segment_paths(hosts.url, account.account_id)
    assert copies(local.segment_directory) == sorted(names)

    # The bucket set on host A: its next round uploads them and keeps them as copies.
    a = hosts.settings("a")
    (result,) = await compact(a, after_ms=DAY_MS, window_ms=DAY_MS, max_lines=30)
    assert result.legacy_uploaded == 3
    assert await hosts.objects() == sorted(names)
    assert copies(a.segment_directory) == []
    assert copies(a.segment_cache_directory) == sorted(names)
    async with running_client(hosts.settings("b")) as host_b:
        assert await walk(host_b, account, prefer="head", size=31) == before
