"""Protobuf message classes built at import from a few lines describing their fields, for
the wire formats tidegate reads or writes without generated code (Prometheus remote
write's ``WriteRequest``, the Datadog Agent's ``MetricPayload``).

A shape is ``{message name: [(field name, number, type, label, message type name)]}``;
an enum field is declared ``TYPE_INT32`` (the same varint on the wire). Fields a shape
leaves out are kept as unknown fields when a message is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf import (  # type: ignore[import-untyped]
    descriptor_pb2,
    descriptor_pool,
    message_factory,
)

__all__ = ["F", "Field", "message_classes"]

F = descriptor_pb2.FieldDescriptorProto
Field = tuple[str, int, int, int, str]


def message_classes(
    file_name: str, package: str, shapes: Mapping[str, Sequence[Field]]
) -> dict[str, Any]:
    """The message class of each shape, by its name (proto3, one private pool)."""
    file = descriptor_pb2.FileDescriptorProto(name=file_name, package=package, syntax="proto3")
    for name, fields in shapes.items():
        message = file.message_type.add(name=name)
        for field_name, number, type_, label, type_name in fields:
            field = message.field.add(name=field_name, number=number, type=type_, label=label)
            if type_name:
                field.type_name = f".{package}.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}"))
        for name in shapes
    }
