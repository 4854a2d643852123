"""The sentences the int8 graphs are calibrated on (onnx-int8's smoothing, openvino-int8's ranges).

They live as `calibration.txt` in the graph cache folder, so a rebuild of a stale or damaged
graph keeps the user's calibration; without one the packaged sentences are used (`packaged`).
The manifest records their sha256, and a graph calibrated on other sentences is quantized again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sbert.errors import BackendError
from sbert.formats import layout

if TYPE_CHECKING:  # types only: the server reads the packaged sentences without the onnx extra
    from sbert.backends.base import Chain
    from sbert.backends.smoothing import Feed

FILE = "calibration.txt"
# Nine random draws of 60 to 1,024 SNLI/SST-2 sentences all kept STSb test within 0.1 of fp32;
# fewer than this many sentences gives each channel's maximum too few tokens to come from.
MIN_SENTENCES = 32
BATCH = 32


def check_sentences(sentences: Sequence[str], where: str) -> list[str]:
    """The non-blank sentences, or a one-line error naming `where` when there are too few."""
    kept = [s.strip() for s in sentences if s.strip()]
    if len(kept) < MIN_SENTENCES:
        need = f"int8 calibration needs at least {MIN_SENTENCES}, one a line"
        raise BackendError(f"{where}: {len(kept)} sentences; {need}")
    return kept


def read_file(path: Path) -> list[str]:
    """A calibration file's sentences (UTF-8, one a line), checked before anything is exported."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise BackendError(f"{path}: cannot read calibration file ({e.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise BackendError(f"{path}:{line}: not UTF-8 (byte {e.start}); calibration files are UTF-8 text") from None
    return check_sentences(text.splitlines(), str(path))


def packaged() -> list[str]:
    """The default calibration: the package's calibration set (backends/calibration.txt).

    Its 186 first lines were written for it and span single words, queries, code and 40-word
    sentences; the last 60 are general sentences (the demo corpus's, copied here so the backends
    never import the demo). Static int8 needs that spread: calibrated on 320 SNLI captions alone,
    openvino-int8 kept a cosine of only 0.782 to fp32 on its worst STSb test sentence, 0.965 with
    this set (benchmarks/speed/int8_variants.py; docs/speed.md).
    """
    from importlib import resources

    text = resources.files("sbert.backends").joinpath("calibration.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


def stored(folder: Path) -> list[str]:
    """The cache folder's calibration sentences, else the packaged ones."""
    path = folder / FILE
    return read_file(path) if path.is_file() else packaged()


def store(folder: Path, sentences: Sequence[str]) -> None:
    """Write the calibration sentences into the cache folder, atomically."""
    kept = check_sentences(sentences, "calibration sentences")
    folder.mkdir(parents=True, exist_ok=True)
    with layout.atomic_file(folder / FILE) as f:
        f.write(("\n".join(kept) + "\n").encode())


def digest(sentences: Sequence[str]) -> str:
    """sha256 of the sentences, as the manifest records them."""
    return hashlib.sha256("\n".join(sentences).encode()).hexdigest()


def feeds(chain: Chain, sentences: Sequence[str], names: Sequence[str]) -> list[Feed]:
    """Padded numpy inputs for the graph, `BATCH` sentences at a time.

    A cross-encoder reads pairs, so it is calibrated on consecutive sentences joined in pairs.
    """
    encoder = chain.transformer
    pair_ids = getattr(encoder, "pair_ids", None)
    if pair_ids is not None:
        ids = pair_ids(list(zip(sentences[::2], sentences[1::2], strict=False)))
    else:
        ids = encoder.token_ids(list(sentences))[0]
    batches = [chain.pad(ids[i : i + BATCH]) for i in range(0, len(ids), BATCH)]
    return [{name: batch[name].cpu().numpy() for name in names} for batch in batches]
