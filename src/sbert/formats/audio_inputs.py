"""Sounds as bytes: a WAV or FLAC file decoded by libsndfile (soundfile, the `audio` extra) under a length limit.

The header is read first (frames, sample rate): a sound over `max_seconds`, or at a rate no microphone
records, is refused before a sample is decoded, since a few KB of FLAC silence can decode to hundreds of
MB. Channels are averaged to one, as sentence-transformers 6.3 averages a decoder's channels, and the
result is `{"array", "sampling_rate"}`, the shape the library's encode takes.
"""

from __future__ import annotations

import io
from typing import Any

from sbert.errors import SbertError
from sbert.install_hint import install_hint

MAX_SAMPLE_RATE = 192_000  # studio audio's highest common rate


class AudioTooLongError(ValueError):
    """A sound longer than the caller's limit (read from its header)."""


def decode_audio(raw: bytes, max_seconds: float | None = None) -> dict[str, Any]:
    """`{"array": float32 mono samples, "sampling_rate": Hz}` of a WAV or FLAC file's bytes.

    Raises AudioTooLongError over `max_seconds`, ValueError for bytes that are not a readable sound, and
    SbertError (naming the extra) without soundfile.
    """
    try:
        import soundfile
    except ImportError:
        raise SbertError(f"decoding audio needs soundfile: {install_hint('audio')}") from None
    try:
        with soundfile.SoundFile(io.BytesIO(raw)) as sound:
            rate, frames = int(sound.samplerate), int(sound.frames)
            if not 0 < rate <= MAX_SAMPLE_RATE:
                raise ValueError(f"a sample rate of {rate} Hz")
            if max_seconds is not None and frames > max_seconds * rate:
                raise AudioTooLongError(f"{frames / rate:.1f} s of audio; the limit is {max_seconds:g} s")
            samples = sound.read(dtype="float32", always_2d=True)
    except ValueError:
        raise
    except (RuntimeError, TypeError) as e:  # soundfile's LibsndfileError is a RuntimeError
        raise ValueError(f"not a readable WAV or FLAC file ({type(e).__name__})") from None
    return {"array": samples.mean(axis=1), "sampling_rate": rate}
