"""Settings: one pydantic-settings class, read and validated once at start-up from
``TIDEGATE_*`` environment variables (flags of the CLI override them). A bad value
fails start with the variable's name, never a request. The foundation layer: this
module imports nothing of tidegate's domains (docs/architecture.md)."""

from __future__ import annotations

from ipaddress import IPv4Network, IPv6Network, ip_network
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATA_DIR = Path("var")
DEFAULT_REDIS_PREFIX = "tidegate:"


def parse_networks(text: str) -> tuple[IPv4Network | IPv6Network, ...]:
    """A comma list of IP addresses or CIDR networks (``TIDEGATE_TRUSTED_PROXIES``)."""
    try:
        return tuple(
            ip_network(item.strip(), strict=False) for item in text.split(",") if item.strip()
        )
    except ValueError as error:
        raise ValueError(f"trusted_proxies: {error}") from None


def check_redis_prefix(value: str) -> str:
    """``value`` when it can start every Redis key and channel name tidegate uses, else
    ``ValueError``. No braces: a throttle's keys carry a Redis Cluster hash tag
    (``{pipeline:node}``) right after the prefix, and Cluster hashes the first ``{...}``
    of a key, so a brace in the prefix would move every throttle key to one slot."""
    if not value:
        raise ValueError("must not be empty")
    if any(char.isspace() for char in value):
        raise ValueError("must not contain whitespace")
    if "{" in value or "}" in value:
        raise ValueError("must not contain { or } (Redis Cluster hash tags)")
    return value


class SettingsError(ValueError):
    """Refused settings: the message names each variable and what is wrong with it."""

    @classmethod
    def explain(cls, error: ValidationError) -> SettingsError:
        problems = []
        for item in error.errors(include_url=False, include_input=False):
            field = next((str(part) for part in item["loc"] if isinstance(part, str)), None)
            name = f"TIDEGATE_{field.upper()}: " if field else ""
            problems.append(f"{name}{item['msg']}")
        return cls("; ".join(problems))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="TIDEGATE_",
        frozen=True,
        extra="ignore",
        env_ignore_empty=True,
        validate_default=True,
    )

    # An SQLite file under data_dir when unset (the validator below fills it in).
    database_url: str = ""
    redis_url: str | None = None
    # Starts every Redis key and pub/sub channel name this server uses (docs/decisions.md,
    # "One Redis namespace"): deployments sharing a Redis server need different ones.
    redis_prefix: str = DEFAULT_REDIS_PREFIX
    data_dir: Path = DEFAULT_DATA_DIR
    secret_key: str | None = None
    # Server secrets sealed values may still be under (comma list, each as it was set, or
    # the old secret file's text): opened, never sealed with (README, "Rotating
    # the server secret").
    previous_secret_keys: str = ""
    rate_limit_per_minute: int = Field(default=50, ge=0)
    # A signed-in person's browser session (docs/web.md, "Rate limits"): a budget of
    # its own per person (or per key a session signed in with), so the web app's
    # several calls per search never meet the scripts' 50 per minute; 0: no limit.
    session_rate_limit_per_minute: int = Field(default=600, ge=0)
    max_body_bytes: int = Field(default=1024 * 1024, ge=1)
    bootstrap: bool = True
    otel: bool = False
    # Ingestion (docs/ingest.md): fsync mode of SQLite's write engine, requests in flight
    # per worker before 503, whether this process sweeps lines past retention (another
    # process or host must, when off) and the seconds between its sweeps.
    sqlite_synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "FULL"
    ingest_max_in_flight: int = Field(default=64, ge=1)
    retention_enabled: bool = True
    retention_interval_s: float = Field(default=3600.0, gt=0)
    # Ingest bodies parsed at once per worker, each in a worker thread (docs/ingest.md:
    # this bounds a worker's parsing memory).
    ingest_parse_threads: int = Field(default=2, ge=1)
    # Group commit (docs/ingest.md): a worker's pending lines are committed together
    # after this many milliseconds, or as soon as this many lines wait.
    ingest_group_commit_ms: float = Field(default=2.0, ge=0)
    ingest_group_commit_lines: int = Field(default=5_000, ge=1)
    # Parsing templates' match counts (docs/line-parsing.md): each worker adds what it
    # counted to the database this often (seconds); 0: only when it stops.
    template_counts_flush_s: float = Field(default=10.0, ge=0)
    # Pipeline http destinations (docs/runtime.md): non-public addresses a destination
    # may reach anyway, comma-separated CIDRs and host names; empty: public ones only.
    # Parsed (and a mistyped one refused) when the app starts.
    destination_allow: str = ""
    # Archiving (docs/archiving.md): whether this process runs the archive runner;
    # seconds between its rounds; seconds after a UTC day ends before it is written
    # (lines of its last moments may still be committing); attempts per day before it
    # is reported failed; the first retry's delay (doubling, capped).
    archive_enabled: bool = True
    archive_tick_s: float = Field(default=60.0, gt=0)
    archive_delay_s: float = Field(default=900.0, ge=0)
    archive_attempts: int = Field(default=8, ge=1, le=50)
    archive_backoff_s: float = Field(default=60.0, ge=0)
    archive_backoff_max_s: float = Field(default=3600.0, ge=0)
    # The S3 API for the ``s3`` archive integration and the pipeline ``s3`` destination:
    # empty: AWS (``https://s3.<region>.amazonaws.com``); else an S3-compatible endpoint
    # (scheme and host). The ``s3`` archive integration names only a bucket: tidegate
    # writes with these credentials (the bucket's policy lets them write), in this region.
    s3_endpoint: str = Field(default="", pattern=r"^(https?://[^/?#\s]{1,255})?$")
    # Where destinations with a vendor's fixed API send instead (a regional or proxy
    # endpoint, a compatible receiver): ``<destination type>=<scheme://host[:port]>``,
    # comma-separated (``datadog-logs=https://dd-proxy:8443``); the API's paths are kept.
    destination_endpoints: str = Field(
        default="",
        pattern=r"^([a-z0-9-]{1,64}=https?://[^/?#\s,]{1,255}(,[a-z0-9-]{1,64}=https?://[^/?#\s,]{1,255})*)?$",
    )
    archive_s3_region: str = Field(default="us-east-1", pattern=r"^[a-z0-9-]{1,64}$")
    archive_s3_access_key_id: str = ""
    archive_s3_secret_access_key: str = ""
    # The ``azblob`` archive integration (an account name and key): the Blob service's
    # URL, ``{account}`` replaced by the account name (another cloud's suffix, or
    # Azurite's path-style ``http://127.0.0.1:10000/{account}``), and the container
    # the archives go to (made when missing; docs/archiving.md).
    azure_blob_endpoint: str = Field(
        default="https://{account}.blob.core.windows.net",
        pattern=r"^https?://[^?#\s]{0,255}\{account\}[^?#\s]{0,255}$",
    )
    archive_azure_container: str = Field(
        default="tidegate-archive", max_length=63, pattern=r"^[a-z0-9](-?[a-z0-9]){2,62}$"
    )
    # The ``gcs`` archive integration (a bucket and a project id): the JSON API's
    # endpoint (empty: ``https://storage.googleapis.com``; else scheme and host, e.g. an
    # emulator), and the server's own service account key file (JSON, as Google's
    # console downloads it) that tidegate writes with: the bucket grants it.
    gcs_endpoint: str = Field(default="", pattern=r"^(https?://[^/?#\s]{1,255})?$")
    archive_gcs_credentials_file: str = ""
    # The ``swift`` archive integration (OpenStack Keystone credentials and an auth URL):
    # the container the archives go to in the tenant's project (made when missing;
    # docs/archiving.md "OpenStack Swift").
    archive_swift_container: str = Field(
        default="tidegate-archive", min_length=1, max_length=256, pattern=r"^[^/\s]+$"
    )
    # IBM Cloud Object Storage: the IAM endpoint that exchanges an API key for a token.
    ibm_iam_token_url: str = Field(
        default="https://iam.cloud.ibm.com/identity/token", pattern=r"^https?://\S{1,2048}$"
    )
    # The server's edge (docs/decisions.md "The server's edge"): seconds without a body
    # byte before 408, bytes of request bodies one worker holds at once before 503,
    # the request line plus headers before 431, seconds to complete them before close.
    body_timeout_s: float = Field(default=30.0, gt=0)
    max_buffered_bytes: int = Field(default=64 * 1024 * 1024, ge=1)
    max_header_bytes: int = Field(default=64 * 1024, ge=1)
    header_timeout_s: float = Field(default=10.0, gt=0)
    # The gateway's data plane, per worker (docs/runtime.md, "Back-pressure"): requests in
    # flight per route (then 429) and per http destination (then 503), POSTs in flight to
    # one destination, a request's delivery budget in ms, CPU-heavy jobs at once.
    gateway_route_inflight: int = Field(default=64, ge=1, le=1_000_000)
    gateway_destination_inflight: int = Field(default=32, ge=1, le=1_000_000)
    gateway_http_concurrency: int = Field(default=4, ge=1, le=10_000)
    gateway_deadline_ms: int = Field(default=10_000, ge=1, le=3_600_000)
    gateway_cpu_slots: int = Field(default=2, ge=1, le=1_024)
    # Live tail (docs/export-and-tail.md): seconds between re-checks of an open stream's
    # credential (a deleted key or deactivated account ends the stream).
    tail_recheck_s: float = Field(default=3.0, gt=0)
    # Throttle (docs/throttle.md): keys and approximate bytes of in-memory throttle state
    # across ALL processors of one worker process; past either, new keys fail open.
    throttle_max_keys: int = Field(default=1_000_000, ge=1)
    throttle_max_bytes: int = Field(default=256 * 1024 * 1024, ge=1)
    # Request path (docs/decisions.md): the Redis rate limiter's timeout per call (it
    # then fails open, behind a circuit breaker); PostgreSQL's statement_timeout and how
    # long a request waits for a pooled connection before answering 503.
    rate_limit_redis_timeout_s: float = Field(default=0.2, gt=0)
    db_statement_timeout_s: float = Field(default=30.0, ge=0)
    db_pool_timeout_s: float = Field(default=10.0, gt=0)
    # The work budget of one read of stored lines (docs/fair-reads.md): SQLite virtual
    # machine steps (0: unlimited), PostgreSQL's statement_timeout for its statements
    # (and for all of them together), and the wall time of its DuckDB statements over
    # the log store's segments (0: unlimited); the CPU of one read past which its
    # account's reads run at a lower priority for a minute (0: never).
    read_budget_sqlite_steps: int = Field(default=250_000_000, ge=0)
    read_budget_pg_timeout_s: float = Field(default=10.0, ge=0)
    read_budget_segments_s: float = Field(default=10.0, ge=0)
    read_heavy_cpu_s: float = Field(default=0.25, ge=0)
    # PostgreSQL connections per worker process, all pools together (docs/decisions.md,
    # "PostgreSQL connections"); unset: derived from the server's max_connections and
    # the number of workers (set by ``tidegate serve --workers``).
    db_pool_size: int | None = Field(default=None, ge=4)
    workers: int = Field(default=1, ge=1)
    # How ``tidegate serve --workers N`` starts its workers: forked from the supervisor
    # with the app imported (Linux), or spawned as fresh interpreters.
    worker_start: Literal["fork", "spawn"] = "fork"
    # Seconds each step of a worker's shutdown may take (closing the alert runner, the
    # pipeline and ingest runtimes, live tail, the database, Redis) before it is logged
    # by name and left behind, so a stop always completes.
    shutdown_step_timeout_s: float = Field(default=10.0, gt=0)

    # Where people reach this server (links in invitation and password-reset e-mail,
    # alert notifications); empty: http://127.0.0.1:8080.
    public_url: str = "http://127.0.0.1:8080"
    # Outgoing e-mail (alerts, invitations, password resets). No host: nothing is sent
    # (invitation links are still returned to the inviting admin).
    smtp_host: str | None = None
    smtp_port: int = Field(default=25, ge=1, le=65535)
    smtp_username: str | None = None
    smtp_password: str | None = None
    smtp_starttls: bool = False
    smtp_from: str = "tidegate@localhost"
    smtp_timeout_s: float = Field(default=10.0, gt=0)
    # Alert channels whose services live elsewhere: the base URLs tidegate posts to, so
    # tests and air-gapped installs can point them anywhere.
    slack_base_url: str = "https://hooks.slack.com"
    pagerduty_events_url: str = "https://events.pagerduty.com/v2/enqueue"

    # The log store's columnar tier (docs/log-store.md, "Segments"): whether this process
    # runs the compactor (one at a time across workers and hosts, by a lease); lines are
    # moved per account and window of ``segment_window_s`` of their received time, once
    # the whole window is older than ``segment_after_s``; at most ``segment_max_lines``
    # lines a file; the directory of the files (empty: ``<data_dir>/segments``); seconds
    # between the compactor's rounds. Reads always include the segments there are.
    segments_enabled: bool = False
    segment_after_s: float = Field(default=86_400.0, ge=0)
    segment_window_s: float = Field(default=86_400.0, ge=1, le=7 * 86_400)
    segment_max_lines: int = Field(default=100_000, ge=1, le=5_000_000)
    segment_dir: Path | None = None
    segment_tick_s: float = Field(default=60.0, gt=0)
    # Segments in an S3-compatible bucket (docs/log-store.md, "Segments in object
    # storage"), so that every host reads them: the bucket (empty: segments are the
    # files of ``segment_dir`` only), the keys' folder in it, the S3 API (empty: AWS's
    # in the region), the region signed for and the credentials. Each host keeps copies
    # of the segments it read in ``segment_cache_dir`` (empty: ``<data_dir>/segment-cache``),
    # the least recently used removed beyond ``segment_cache_bytes``.
    segment_s3_bucket: str = Field(default="", pattern=r"^([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])?$")
    segment_s3_prefix: str = Field(default="", pattern=r"^[A-Za-z0-9!_.*'()/-]{0,512}$")
    segment_s3_endpoint: str = Field(default="", pattern=r"^(https?://[^/?#\s]{1,255})?$")
    segment_s3_region: str = Field(default="us-east-1", pattern=r"^[a-z0-9-]{1,64}$")
    segment_s3_access_key_id: str = ""
    segment_s3_secret_access_key: str = ""
    segment_cache_dir: Path | None = None
    segment_cache_bytes: int = Field(default=10 * 1024**3, ge=1)

    # p10-views
    # Alerts (docs/alerts.md): whether this process runs the alert evaluator and the
    # delivery outbox; seconds between their rounds.
    alerts_enabled: bool = True
    alert_tick_s: float = Field(default=1.0, gt=0)
    # Seconds a window end waits before it closes (lines received just before it may
    # still be committing); lines read per evaluation transaction.
    alert_settle_s: float = Field(default=1.0, ge=0)
    alert_batch_lines: int = Field(default=2_000, ge=1)
    # PostgreSQL: seconds an id missing from the store is watched for a late commit.
    alert_gap_grace_s: float = Field(default=60.0, ge=0)
    # Deliveries: attempts in all, the first retry's delay (doubling, capped), and the
    # time one attempt may take.
    alert_delivery_attempts: int = Field(default=5, ge=1, le=20)
    alert_delivery_backoff_s: float = Field(default=2.0, ge=0)
    alert_delivery_backoff_max_s: float = Field(default=300.0, ge=0)
    alert_delivery_timeout_s: float = Field(default=10.0, gt=0)
    # Match lines against alerts in a child process (off the server's interpreter);
    # false: in a thread of the server process.
    alert_match_process: bool = True
    # For tests only: every alert window (trigger and autoresolve intervals) lasts this
    # fraction of its interval, so a live test need not wait 30 s for the shortest.
    # Leave it at 1 in production.
    alert_window_scale: float = Field(default=1.0, gt=0, le=1)

    # p9-api
    # Seconds between flushes of each worker's pipeline usage counts to the database.
    pipeline_usage_flush_s: float = Field(default=5.0, gt=0, le=3600)

    # p11-people (docs/people.md)
    # Browser sessions end after this many seconds without a request, and this many
    # seconds after sign-in whatever happens.
    session_idle_s: float = Field(default=8 * 3600.0, gt=0)
    session_max_age_s: float = Field(default=7 * 24 * 3600.0, gt=0)
    # Failed sign-ins (docs/isolation.md, "Sign-in limits"): allowed per (e-mail, client
    # address) within the window; per client address across e-mails, and per e-mail
    # across addresses, before each further attempt waits a doubling delay (capped).
    signin_max_failures: int = Field(default=10, ge=1)
    signin_failure_window_s: float = Field(default=900.0, gt=0)
    signin_address_max_failures: int = Field(default=100, ge=1)
    signin_backoff_after: int = Field(default=30, ge=1)
    signin_backoff_max_s: float = Field(default=60.0, gt=0)
    # Proxies whose X-Forwarded-For names the client (comma list of addresses or CIDR
    # networks); from any other peer the header is ignored. Default: none.
    trusted_proxies: str = ""
    # argon2id parameters for new password hashes (auth/passwords.py): RFC 9106's
    # low-memory profile (64 MiB, 3 passes), or OWASP's minimum (19 MiB, 2 passes;
    # about a seventh of the CPU) for small machines.
    password_hash_profile: Literal["rfc9106-low-memory", "owasp-minimum"] = "rfc9106-low-memory"
    # How long an invitation and a password-reset link stay valid.
    invitation_ttl_s: float = Field(default=7 * 24 * 3600.0, gt=0)
    password_reset_ttl_s: float = Field(default=3600.0, gt=0)
    # logdna-cli's signed queries: how far ``ts`` may be from the server's clock.
    signed_query_window_s: float = Field(default=300.0, gt=0)
    # The syslog listener (docs/syslog.md): off unless a port is set (0: any free port,
    # for tests); TLS only when a certificate and its key are set.
    syslog_port: int | None = Field(default=None, ge=0, le=65535)
    syslog_host: str = "127.0.0.1"
    syslog_tls_cert: Path | None = None
    syslog_tls_key: Path | None = None
    syslog_max_line_bytes: int = Field(default=64 * 1024, ge=1024, le=16 * 1024 * 1024)
    syslog_max_connections: int = Field(default=256, ge=1)
    syslog_idle_timeout_s: float = Field(default=600.0, gt=0)
    # The Fluent Forward listener (docs/components.md, `fluent`): off unless a port is
    # set (24224 is Fluentd's; 0: any free port, for tests).
    fluent_forward_port: int | None = Field(default=None, ge=0, le=65535)
    fluent_forward_host: str = "127.0.0.1"
    fluent_forward_max_connections: int = Field(default=256, ge=1)
    fluent_forward_idle_timeout_s: float = Field(default=600.0, gt=0)

    @field_validator("sqlite_synchronous", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator(
        "redis_url",
        "secret_key",
        "smtp_host",
        "syslog_tls_cert",
        "syslog_tls_key",
        "segment_dir",
        "segment_cache_dir",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator("trusted_proxies")
    @classmethod
    def _trusted_proxies(cls, value: str) -> str:
        parse_networks(value)  # a mistyped network fails start
        return value

    @field_validator("redis_prefix")
    @classmethod
    def _redis_prefix(cls, value: str) -> str:
        return check_redis_prefix(value)

    @model_validator(mode="after")
    def _default_database(self) -> Settings:
        if not self.database_url:
            path = (self.data_dir / "tidegate.sqlite3").as_posix()
            object.__setattr__(self, "database_url", f"sqlite+aiosqlite:///{path}")
        return self

    @model_validator(mode="after")
    def _syslog_tls_pair(self) -> Settings:
        if (self.syslog_tls_cert is None) != (self.syslog_tls_key is None):
            raise ValueError("TIDEGATE_SYSLOG_TLS_CERT and TIDEGATE_SYSLOG_TLS_KEY go together")
        return self

    @model_validator(mode="after")
    def _segment_bucket(self) -> Settings:
        if bool(self.segment_s3_access_key_id) != bool(self.segment_s3_secret_access_key):
            # Neither: the AWS default credential chain (an instance or task role, ...).
            raise ValueError(
                "TIDEGATE_SEGMENT_S3_ACCESS_KEY_ID and TIDEGATE_SEGMENT_S3_SECRET_ACCESS_KEY "
                "go together"
            )
        if self.segment_s3_bucket and (
            self.segment_cache_directory.resolve() == self.segment_directory.resolve()
        ):
            raise ValueError("TIDEGATE_SEGMENT_CACHE_DIR must not be TIDEGATE_SEGMENT_DIR")
        return self

    @property
    def segment_directory(self) -> Path:
        """Where the log store's segments live (with a bucket: the segments written
        before it was set, which the compactor uploads)."""
        return self.segment_dir if self.segment_dir is not None else self.data_dir / "segments"

    @property
    def segment_cache_directory(self) -> Path:
        """With a segment bucket: this host's copies of its segments."""
        if self.segment_cache_dir is not None:
            return self.segment_cache_dir
        return self.data_dir / "segment-cache"

    @classmethod
    def from_env(cls) -> Settings:
        """The settings of the environment, or `SettingsError` naming each bad variable."""
        try:
            return cls()
        except ValidationError as error:
            raise SettingsError.explain(error) from None

    def with_overrides(self, **changes: object) -> Settings:
        """A copy with ``changes`` applied and validated like the environment's values."""
        return type(self).model_validate({**self.model_dump(), **changes})

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")
