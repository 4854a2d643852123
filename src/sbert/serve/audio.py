"""Sounds in embedding requests: a base64 WAV or FLAC data URL, decoded by the library's reader under limits.

formats/audio_inputs.py decodes (length read from the header first, channels averaged); here its
refusals become the server's answers: 413 over `--max-audio-seconds` or the byte limit, 400 for a
corrupt sound, 501 where the `audio` extra is missing.
"""

from __future__ import annotations

from typing import Any

from sbert.errors import SbertError
from sbert.formats.audio_inputs import AudioTooLongError, decode_audio
from sbert.serve.media_limits import check_bytes, data_url_bytes
from sbert.serve.state import ApiError, ServerState

AUDIO_DATA_URL = "data:audio/"


def is_audio_url(value: object) -> bool:
    """Whether an input string is an audio data URL (`data:audio/wav;base64,...`)."""
    return isinstance(value, str) and value.startswith(AUDIO_DATA_URL)


def read_audio(value: object, where: str, st: ServerState) -> dict[str, Any]:
    """`{"array": float32 mono samples, "sampling_rate": Hz}` from a base64 WAV/FLAC data URL, within the limits."""
    if not is_audio_url(value):
        raise ApiError(422, f"{where}: a sound is a base64 data URL (data:audio/wav;base64,...)", "invalid_audio")
    raw = check_bytes(data_url_bytes(str(value), where, "audio"), where, "audio", st)
    return _decoded(raw, where, st.settings.max_audio_seconds)


def _decoded(raw: bytes, where: str, max_seconds: float) -> dict[str, Any]:
    try:
        return decode_audio(raw, max_seconds)
    except AudioTooLongError as e:
        raise ApiError(413, f"{where}: {e} (--max-audio-seconds)", "audio_too_large") from None
    except ValueError as e:
        raise ApiError(400, f"{where}: {e}", "invalid_audio") from None
    except SbertError as e:
        raise ApiError(501, f"{where}: {e}", "no_audio_decoder") from None
