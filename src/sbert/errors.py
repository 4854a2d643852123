"""User-facing errors: the CLI prints these as one line and exits 2."""

from __future__ import annotations


class SbertError(Exception):
    """Base class for errors caused by the user's input, not by a bug."""


class ModelNotFoundError(SbertError):
    """No model could be found for the given name or path."""


class ModelFormatError(SbertError):
    """A model directory exists but its files are missing or malformed."""


class BackendError(SbertError):
    """An ONNX export, a cached graph or a backend check failed."""


class TruncationError(SbertError):
    """An input was longer than the model's max_seq_length and truncation was refused."""


def first_line(error: BaseException) -> str:
    """The first line of an exception's message (its type name when the message is empty)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class DeviceError(SbertError, ValueError):
    """A device or precision the user asked for does not exist on this machine (a bad argument)."""
