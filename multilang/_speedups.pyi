"""Types of the optional C extension built from _speedups.c (see that file and setup.py)."""

from collections.abc import Callable
from typing import Any

from .messages import Ack, ComponentMessage, Emit

def component_messages(
    values: list[Any],
    emit: type[Emit],
    ack: type[Ack],
    other: Callable[[Any], ComponentMessage],
    /,
) -> list[ComponentMessage] | None:
    """Parsed component messages -> typed messages (emits and acks in C, the rest through
    `other`); None as soon as an emit is malformed. The reference version is
    multilang.component_decoding.ComponentDecoder._messages_py."""

def plain_frames(body: str, /) -> tuple[bytes, list[str], list[str], list[str], int] | None:
    """A body of complete frames, scanned as plain emits and acks only; None for anything else.
    The reference version is multilang.component_decoding.plain_frames_py."""

def json_values(values: Any, /) -> bytes | None:
    """A list of str, int (64 bits), bool and None as JSON bytes, byte for byte what
    multilang.codec.dumps writes; None for any other value (see _json_values.c)."""
