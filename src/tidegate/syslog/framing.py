"""Syslog over TCP: one connection's byte stream cut into frames (RFC 6587).

Both framings, told apart at the start of each frame as RFC 6587 lets a receiver do:

- **octet counting**: ``LEN SP MSG``, the frame's length in ASCII digits first (what
  syslog-ng's ``syslog()`` driver and rsyslog with ``TCP_Framing="octet-counted"`` send);
- **non-transparent** (newline): ``MSG LF``, a trailing CR dropped (rsyslog's and
  ``logger``'s default). A message starts with ``<`` (its priority) or a letter, never
  a digit, so a frame that starts with digits and a space is counted.

Bounded and linear: a frame longer than ``max_frame`` bytes is cut there (the frame
is kept, flagged ``truncated``) and the rest of it is dropped as it arrives, never
held; each byte is looked at a constant number of times. The buffer never holds more
than ``max_frame`` bytes plus the chunk being fed.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Frame", "Framer"]

# A length of more digits than this is not a length (a frame of 1 GB is still 10).
_MAX_DIGITS = 10
_BETWEEN_FRAMES = b"\r\n\x00"


@dataclass(frozen=True, slots=True)
class Frame:
    data: bytes
    # Cut at ``max_frame`` bytes, or by the end of the connection inside a counted frame.
    truncated: bool = False


class Framer:
    """Feed it a connection's bytes as they arrive; it returns the whole frames."""

    __slots__ = ("_buffer", "_scanned", "_skip", "_skip_line", "_want", "max_frame")

    def __init__(self, *, max_frame: int) -> None:
        self.max_frame = max_frame
        self._buffer = bytearray()
        self._want: int | None = None  # the length of the counted frame being read
        self._skip = 0  # bytes of an over-long counted frame still to drop
        self._skip_line = False  # dropping an over-long line up to its LF
        self._scanned = 0  # bytes of the buffered line already searched for LF

    @property
    def buffered(self) -> int:
        """Bytes held between calls (at most ``max_frame``)."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames: list[Frame] = []
        while self._buffer and self._step(frames):
            pass
        return frames

    def close(self) -> list[Frame]:
        """What is left when the connection ends: a last line without its LF is a line;
        a counted frame cut short is kept, flagged."""
        rest = bytes(self._buffer)
        self._buffer.clear()
        counted, self._want = self._want is not None, None
        if self._skip or self._skip_line:
            self._skip, self._skip_line = 0, False
            return []
        if counted:
            return [Frame(rest, truncated=True)] if rest else []
        if rest and rest[:1].isdigit() and rest.isdigit():
            return []  # only the start of a frame's length
        line = rest.rstrip(_BETWEEN_FRAMES)
        return [Frame(line)] if line else []

    def _step(self, frames: list[Frame]) -> bool:
        """Take what the buffer's start allows; False when more bytes are needed."""
        buffer = self._buffer
        if self._skip:
            dropped = min(self._skip, len(buffer))
            del buffer[:dropped]
            self._skip -= dropped
            return not self._skip
        if self._skip_line:
            end = buffer.find(b"\n")
            if end < 0:
                buffer.clear()
                return False
            del buffer[: end + 1]
            self._skip_line = False
            return True
        if self._want is not None:
            return self._counted(frames, self._want)
        if self._scanned == 0:
            first = buffer[0]
            if first in _BETWEEN_FRAMES:
                del buffer[:1]
                return True
            if 0x30 <= first <= 0x39:
                space = buffer.find(b" ", 0, _MAX_DIGITS + 1)
                if space < 0 and len(buffer) <= _MAX_DIGITS and buffer.isdigit():
                    return False  # the length is still arriving
                if space > 0 and buffer[:space].isdigit():
                    self._want = int(buffer[:space])
                    del buffer[: space + 1]
                    return True
        return self._line(frames)

    def _counted(self, frames: list[Frame], want: int) -> bool:
        buffer = self._buffer
        size = min(want, self.max_frame)
        if len(buffer) < size:
            return False
        frames.append(Frame(bytes(buffer[:size]), truncated=want > size))
        del buffer[:size]
        self._skip = want - size
        self._want = None
        return True

    def _line(self, frames: list[Frame]) -> bool:
        buffer = self._buffer
        end = buffer.find(b"\n", self._scanned)
        if end < 0:
            if len(buffer) > self.max_frame:
                frames.append(Frame(bytes(buffer[: self.max_frame]), truncated=True))
                buffer.clear()
                self._scanned = 0
                self._skip_line = True
                return False
            self._scanned = len(buffer)
            return False
        self._scanned = 0
        line = bytes(buffer[: min(end, self.max_frame)])
        del buffer[: end + 1]
        if end > self.max_frame:
            frames.append(Frame(line, truncated=True))
        elif line.rstrip(b"\r"):
            frames.append(Frame(line.removesuffix(b"\r")))
        return True
