"""What every pipeline component type declares, and what it is given to run.

A component type (``http`` source, ``filter`` processor, ``mezmo`` destination...) is
one ``Component``: its strict configuration model, how to build its running form from
a validated configuration, what it needs (a feature flag, a gateway route), the names
of its extra outputs, and a few hooks. ``catalogue.REGISTRY`` maps ``(kind, type)`` to
it; graph validation, the compiler, simulation and the API ask the registry, never a
type string.

Processors never modify the events they are given: one event object may travel down
several branches, so a processor that changes events emits changed copies.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel

from tidegate.errors import ErrorItem, ValidationFailed

if TYPE_CHECKING:
    import httpx

    from tidegate.components.sources.pull import PullContext, Pulled
    from tidegate.components.sources.push import Push, Received
    from tidegate.kit.destination_guard import DestinationPolicy
    from tidegate.logs.intake import LineIntake
    from tidegate.processing.throttle import Clock, RedisStore, ThrottleBudget

__all__ = [
    "DROPPED",
    "KIND_ALIASES",
    "UNMATCHED",
    "BuildContext",
    "Component",
    "ComponentKind",
    "DeliveryContext",
    "Event",
    "Needs",
    "NodeOutput",
    "NodeRef",
    "Offload",
    "Parcel",
    "ProcessorRuntime",
    "RunContext",
    "config_refused",
]

Event = dict[str, Any]
T = TypeVar("T")
C = TypeVar("C", bound=BaseModel)

ComponentKind = Literal["source", "processor", "destination"]
KIND_ALIASES: Final[Mapping[str, ComponentKind]] = {
    "source": "source",
    "processor": "processor",
    "transform": "processor",
    "destination": "destination",
    "sink": "destination",
}
"""The platform's clients say ``transform`` and ``sink``; tidegate stores the kinds
``processor`` and ``destination``. Kinds are not types: ``transform`` names no type."""

DROPPED: Final = "dropped"
"""The second output of a processor that discards events (a Throttle)."""
UNMATCHED: Final = "_unmatched"
"""The output of events no route (or parser) matched."""


class Offload(Protocol):
    """Runs ``function`` in a worker thread when ``work`` (events, bytes) is large."""

    def __call__(self, function: Callable[[], T], *, work: int) -> Awaitable[T]: ...


@dataclass(frozen=True, slots=True)
class NodeOutput:
    """What one node emitted for one batch.

    ``main`` is the default output (``<node id>``); ``named`` the other outputs
    (``<node id>.<name>``), each present (maybe empty) whenever the node ran;
    ``discarded`` the events the processor removed for good (a filter's rejects, a
    sample's unsampled), shown by simulation; ``received`` the events it was given.
    """

    main: list[Event]
    named: Mapping[str, list[Event]] = field(default_factory=dict)
    received: int = 0
    discarded: list[Event] = field(default_factory=list)

    def output(self, name: str | None) -> list[Event]:
        if name is None:
            return self.main
        return self.named.get(name, [])

    @property
    def dropped(self) -> list[Event] | None:
        """The ``dropped`` output, or None for a node without one."""
        return self.named.get(DROPPED)


@dataclass(frozen=True, slots=True)
class RunContext:
    """What a running processor may use while it decides one batch."""

    offload: Offload | None = None
    features: frozenset[str] = frozenset()
    now_ms: int | None = None
    """Wall-clock time of the batch (epoch ms) for processors that stamp or window by
    processing time; None: read the component's clock."""


class ProcessorRuntime(Protocol):
    """A running processor. ``run`` must not raise on a bad event: the event passes, or
    goes to a documented output; it must not modify the events it is given."""

    async def run(self, events: list[Event], *, context: RunContext) -> NodeOutput: ...


@dataclass(frozen=True, slots=True)
class NodeRef:
    """Which node a runtime is built for."""

    pipeline_id: str
    account_id: str
    node_id: str
    fingerprint: str


def _no_store(_node: NodeRef) -> RedisStore | None:
    return None


@dataclass(frozen=True, slots=True)
class BuildContext:
    """What is injected into ``Component.build``: nothing here is global.

    ``simulation`` builds a runtime with fresh in-memory state, touching nothing live
    (the Throttle then ignores ``throttle_store``)."""

    clock: Clock | None = None
    """Processing-time clock (milliseconds); None: the component's default."""
    throttle_store: Callable[[NodeRef], RedisStore | None] = _no_store
    throttle_budget: ThrottleBudget | None = None
    http_client: Callable[[], httpx.AsyncClient] | None = None
    destination_policy: DestinationPolicy | None = None
    http_concurrency: int = 4
    backoff_base_ms: int = 100
    backoff_cap_ms: int = 5_000
    s3_endpoint: str = ""
    """The S3 API's endpoint for ``s3`` destinations (``TIDEGATE_S3_ENDPOINT``); empty:
    AWS's of the node's region."""
    endpoints: Mapping[str, str] = field(default_factory=dict)
    """Destination type -> the operator's ``scheme://host[:port]`` for a vendor's fixed
    API (``TIDEGATE_DESTINATION_ENDPOINTS``); absent: the vendor's."""
    simulation: bool = False


@dataclass(frozen=True, slots=True)
class Parcel:
    """The events one destination node receives in one request."""

    pipeline_id: str
    account_id: str
    node_id: str
    runtime: Any
    events: list[Event]


@dataclass(frozen=True, slots=True)
class DeliveryContext:
    """What destinations use to deliver one request's events."""

    intake: LineIntake
    """The one writer of log lines (``logs.intake``)."""
    received_ms: int
    deadline: float
    """Event-loop time by which every delivery must be done."""
    offload: Offload


@dataclass(frozen=True, slots=True)
class Needs:
    """What a component needs before it may be saved or run."""

    feature: str | None = None
    """An account feature flag (``throttle-processor``): saving the node needs it; on the
    data plane, without it, the processor passes every event on its main output."""
    gateway_route: bool = False
    """A push source receives its events through a gateway route."""


def _no_outputs(_config: Any) -> list[str]:
    return []


@dataclass(frozen=True, slots=True)
class Component(Generic[C]):
    """One component type.

    * ``build(config, context)`` returns the running form: a ``ProcessorRuntime`` for a
      processor; for a destination, whatever its ``deliver`` uses per node (an HTTP
      sender), possibly None; sources return None today.
    * ``outputs(config)``: names of the outputs beside the main one (``dropped``; a
      route's ``output_name``s and ``_unmatched``); inputs name them
      ``<node id>.<name>``.
    * ``deliver(parcels, context)`` (destinations): deliver every parcel of one request
      for this type at once (so the log store writes them in one transaction); raises
      to say "not delivered, retry".
    * ``vet(config, policy)``: checks needing I/O on save (an http destination's host
      must not resolve to a private address); raises ``ValidationFailed``.
    * ``outbound``: the destination opens connections (a back-pressure gate per node).
    * ``receive(config, push)`` (push sources): the events of one request to the
      source's gateway route, for the ``paths`` under ``/gateway/{id}`` it serves
      (``""``: the route itself); CPU work, run in a worker thread; raises the error
      hierarchy's 4xx for what it refuses.
    * ``pull(config, context)`` (pull sources): fetch what is waiting (an SQS queue's
      messages); called by the pull scheduler, ``sources/pull.py``.
    * ``stored(config, user_config)``: the ``user_config`` to store and answer, when
      the type adds what the server decides (a route's generated ``_output_name``s, which
      the platform's clients read back); absent: stored exactly as sent.
    * ``describe``: one line for the API document.
    """

    kind: ComponentKind
    type: str
    config_model: builtins.type[C]
    build: Callable[[C, BuildContext, NodeRef], Any]
    describe: str
    aliases: tuple[str, ...] = ()
    needs: Needs = Needs()
    outputs: Callable[[C], Sequence[str]] = _no_outputs
    deliver: Callable[[Sequence[Parcel], DeliveryContext], Awaitable[None]] | None = None
    vet: Callable[[C, DestinationPolicy], Awaitable[None]] | None = None
    outbound: bool = False
    receive: Callable[[C, Push], Received] | None = None
    paths: frozenset[str] = frozenset()
    stored: Callable[[C, dict[str, Any]], dict[str, Any]] | None = None
    pull: Callable[[C, PullContext], Awaitable[Pulled]] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.type, *self.aliases)


def config_refused(
    pointer: str, message: str, *, keyword: str, params: dict[str, Any]
) -> ValidationFailed:
    """A save-time check's refusal (``vet``) of the ``user_config`` field at ``pointer``
    (``/uri``), as the v3 validation error."""
    return ValidationFailed(
        f"body.user_config{pointer.replace('/', '.')} {message}",
        context="body",
        errors=[
            ErrorItem(
                keyword=keyword,
                message=message,
                instance_path=f"/user_config{pointer}",
                schema_path=f"#/properties/{pointer.strip('/').split('/')[0]}",
                params=params,
            )
        ],
    )
