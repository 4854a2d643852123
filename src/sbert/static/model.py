"""StaticEncoder: one vector per vocabulary token, averaged per sentence; no transformer, no torch.

The disk layout is sentence-transformers' `StaticEmbedding` saved as a whole model (modules.json
with the module at the root, `model.safetensors` holding `embedding.weight` (V, d),
`tokenizer.json`), so `SentenceTransformer(DIR)` loads what `sbert distill --static` writes and
gives the same vectors. Encoding is the Rust tokenizer, then one sparse averaging matrix times the
table: one scipy call for a whole chunk of texts, no per-sentence Python loop.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from sbert.encoding.prompted import PromptPlan, plan_prompt
from sbert.errors import BackendError, ModelFormatError
from sbert.formats.layout import MODEL_CONFIG_FILE, MODULES_FILE, atomic_directory, read_json, read_modules, write_json
from sbert.formats.model_config import EncoderSettings, check_truncate_dim, read_settings, settings_config
from sbert.mteb_protocol import MtebEncoder, mteb_entry
from sbert.similarity import similarity_matrix
from sbert.vectors.tokens import cut_by_limit, fast_ids, saved_limit

# The type sentence-transformers 3-6 all resolve to their StaticEmbedding module.
STATIC_TYPE = "sentence_transformers.models.StaticEmbedding"
NORMALIZE_TYPE, NORMALIZE_PATH = "sentence_transformers.models.Normalize", "1_Normalize"
WEIGHTS_FILE, TOKENIZER_FILE, WEIGHT_KEY = "model.safetensors", "tokenizer.json", "embedding.weight"
INFO_FILE = "sbert_static.json"


@dataclass(frozen=True)
class StaticInfo:
    """How a static model was made (`sbert_static.json`; sentence-transformers ignores it)."""

    teacher: str = ""
    dim: int = 0
    corpus_sentences: int = 0
    epochs: int = 0
    steps: dict[str, Any] = field(default_factory=dict)


def is_static_dir(path: str | os.PathLike[str]) -> bool:
    """Whether `path` holds a static model this numpy path runs: a StaticEmbedding alone or before Normalize."""
    return static_chain(path) is not None


def static_chain(path: str | os.PathLike[str]) -> tuple[str, bool] | None:
    """(the StaticEmbedding's folder, whether a Normalize follows it), or None for any other chain.

    A StaticEmbedding before a Dense, inside a Router, or behind anything else is a chain that only
    `SentenceEncoder.load` runs whole; reading its table alone would give other vectors.
    """
    names = _module_names(Path(path))
    if names is None or not names or names[0][1] != "StaticEmbedding" or len(names) > 2:
        return None
    if len(names) == 2 and names[1][1] != "Normalize":
        return None
    return names[0][0], len(names) == 2


def _module_names(root: Path) -> list[tuple[str, str]] | None:
    """(path, class name) of each modules.json row, None when there is no readable modules.json."""
    if not (root / MODULES_FILE).is_file():
        return None
    try:
        entries = read_modules(root)
    except (OSError, ModelFormatError):
        return None
    return [(e.path, e.class_name) for e in entries]


def average_matrix(ids: Sequence[Sequence[int]], vocab_size: int) -> sp.csr_matrix:
    """(n, V) sparse rows of 1/len at each token id: times a (V, d) table gives mean token vectors."""
    lengths = np.fromiter((len(row) for row in ids), dtype=np.int64, count=len(ids))
    indptr = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    flat = np.fromiter((t for row in ids for t in row), dtype=np.int64, count=int(indptr[-1]))
    # An empty text keeps an empty row: a zero vector, as sentence-transformers' EmbeddingBag gives.
    data = np.repeat((1.0 / np.maximum(lengths, 1)).astype(np.float32), lengths)
    return sp.csr_matrix((data, flat, indptr), shape=(len(ids), vocab_size))


class StaticEncoder(MtebEncoder):
    """A static-embedding model: `encode` gives (n, d) float32 mean token vectors."""

    def __init__(
        self, tokenizer: Any, table: np.ndarray, info: StaticInfo | None = None, *, unit: bool = False
    ) -> None:
        if table.ndim != 2 or table.shape[0] != tokenizer.get_vocab_size():
            raise ModelFormatError(
                f"static table of shape {table.shape} does not match a vocabulary of {tokenizer.get_vocab_size()}"
            )
        # A static table has no position limit: every token counts, unless tokenizer.json saves a truncation,
        # which sentence-transformers' StaticEmbedding honours (its tokenizer cuts there), and so does this.
        tokenizer.no_padding()
        self.tokenizer, self.table = tokenizer, np.ascontiguousarray(table, dtype=np.float32)
        self.info = info or StaticInfo(dim=table.shape[1])
        self.unit = unit  # a Normalize module follows the table (sentence-transformers' chain), saved as such
        self.source_dir: Path | None = None
        self.settings = EncoderSettings()  # prompts from config_sentence_transformers.json, as for encoders

    @property
    def max_seq_length(self) -> int | None:
        """The truncation tokenizer.json saves, else None: a static table has no token limit of its own."""
        return saved_limit(self.tokenizer)

    @property
    def embedding_dimension(self) -> int:
        """Size of the sentence vector encode returns (truncate_dim when the model has one)."""
        return self.settings.truncate_dim or int(self.table.shape[1])

    @classmethod
    def load(cls, path: str | os.PathLike[str], truncate_dim: int | None = None) -> StaticEncoder:
        """Read a saved static model (ours or sentence-transformers' StaticEmbedding saved at the root).

        Prompts, the default prompt, truncate_dim and the similarity function come from
        config_sentence_transformers.json, as for transformer models; `truncate_dim` overrides the saved one.
        """
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        root = Path(path)
        chain = static_chain(root)
        if chain is None:
            raise ModelFormatError(f"{root}: not a static-embedding model ({_chain_words(root)})")
        folder = root / chain[0]
        for name in (WEIGHTS_FILE, TOKENIZER_FILE):
            if not (folder / name).is_file():
                raise ModelFormatError(f"{folder / name}: missing")
        weights = load_file(str(folder / WEIGHTS_FILE))
        if WEIGHT_KEY not in weights:
            raise ModelFormatError(f"{folder / WEIGHTS_FILE}: no {WEIGHT_KEY!r} tensor")
        info_path = root / INFO_FILE
        info = StaticInfo(**read_json(info_path)) if info_path.is_file() else None
        model = cls(Tokenizer.from_file(str(folder / TOKENIZER_FILE)), weights[WEIGHT_KEY], info, unit=chain[1])
        model.source_dir, model.settings = root, read_settings(root)
        saved = model.settings.truncate_dim if truncate_dim is None else truncate_dim
        model.settings.truncate_dim = check_truncate_dim(saved, model.table.shape[1])
        return model

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the sentence-transformers layout atomically (the old folder stays until it is complete)."""
        from safetensors.numpy import save_file

        with atomic_directory(path) as tmp:
            save_file({WEIGHT_KEY: self.table}, str(tmp / WEIGHTS_FILE))
            self.tokenizer.save(str(tmp / TOKENIZER_FILE))
            rows = [{"idx": 0, "name": "0", "path": "", "type": STATIC_TYPE}]
            if self.unit:
                (tmp / NORMALIZE_PATH).mkdir()
                rows.append({"idx": 1, "name": "1", "path": NORMALIZE_PATH, "type": NORMALIZE_TYPE})
            write_json(tmp / MODULES_FILE, rows)
            write_json(tmp / MODEL_CONFIG_FILE, settings_config(self.settings))
            write_json(tmp / INFO_FILE, asdict(self.info))
        self.source_dir = Path(path)

    def gpu_batch_tokens(self, backend: str | None = None, precision: str = "auto") -> int | None:
        """None: a static model runs its numpy path on the CPU."""
        return None

    @property
    def pooling_modes(self) -> tuple[str, ...]:
        """("static",): a table lookup averaged, TEI's `pooling` field names it so."""
        return ("static",)

    def fast_tokenizer(self) -> Any:
        """A copy of the Rust tokenizer as the model tokenizes: no padding, the saved truncation (if any)."""
        from tokenizers import Tokenizer

        copy = Tokenizer.from_str(self.tokenizer.to_str())
        copy.no_padding()
        return copy

    def run_plan(self, backend: str | None = None, precision: str = "auto", processes: int = 1) -> tuple[str, str]:
        """("static", "fp32"): the one path these options run; one line for an option a static table lacks."""
        check_static_options(backend, precision)
        if processes > 1:
            raise BackendError(f"processes={processes}: a static model needs one (about 50,000 sentences/s on 2 cores)")
        return "static", "fp32"

    def token_rows(
        self, texts: Sequence[str], task: str | None = None, prompt_name: str | None = None
    ) -> tuple[list[list[int]], list[int]]:
        """Token ids per text as encode(task=, prompt_name=) averages them, and the indices the saved truncation cut."""
        prompted = self.prompt_plan(task=task, prompt_name=prompt_name).apply(list(texts))
        rows = self.token_ids(prompted)
        return rows, cut_by_limit(self.tokenizer, prompted, rows, add_special_tokens=False)

    def token_lengths(
        self, texts: Sequence[str], task: str | None = None, prompt_name: str | None = None
    ) -> tuple[list[int], list[int]]:
        """Tokens per text as encode(task=, prompt_name=) averages them, and the indices cut (see token_rows)."""
        rows, cut = self.token_rows(texts, task, prompt_name)
        return [len(row) for row in rows], cut

    def encode_token_rows(
        self, rows: Sequence[Sequence[int]], task: str | None = None, prompt_name: str | None = None,
        backend: str | None = None, precision: str = "auto",
    ) -> np.ndarray:  # fmt: skip
        """float32 (n, dim): the vectors of rows from `token_rows` (as `encode` gives them for the same texts)."""
        check_static_options(backend, precision)
        return self._finish(average_matrix(rows, len(self.table)) @ self.table, self.settings.truncate_dim)

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """Token ids without special tokens (what the table is averaged over), threads for large inputs."""
        return fast_ids(self.tokenizer, texts, add_special_tokens=False)

    @mteb_entry
    def encode(
        self,
        sentences: str | Iterable[str],
        batch_size: int | None = None,
        normalize: bool = False,
        backend: str | None = None,
        precision: str = "auto",
        prompt: str | None = None,
        *,
        prompt_name: str | None = None,
        task: str | None = None,
        truncate_dim: int | None = None,
        **ignored: Any,
    ) -> np.ndarray:
        """(n, d) float32 vectors in input order ((d,) for one string); no truncation, no torch.

        The prompt (`prompt`, `prompt_name`, `task`, else the default) and `truncate_dim` work as in
        SentenceEncoder.encode. `backend` and `precision` exist so callers written for it work
        unchanged; a static model has one path, so anything but the defaults is an error. Options
        with nothing to do here (show_progress, on_truncation, ...) are accepted; unknown ones are not.
        """
        check_static_options(backend, precision, ignored.get("devices"))
        unknown = sorted(set(ignored) - _ACCEPTED_OPTIONS)
        if unknown:
            raise TypeError(f"StaticEncoder.encode got unexpected keyword argument(s): {', '.join(unknown)}")
        if ignored.get("convert_to", "numpy") != "numpy":
            raise BackendError(f"convert_to={ignored['convert_to']!r}: a static model returns numpy arrays")
        width = check_truncate_dim(truncate_dim, int(self.table.shape[1])) or self.settings.truncate_dim
        single = isinstance(sentences, str)
        texts: list[str] = [sentences] if isinstance(sentences, str) else list(sentences)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"sentences[{i}] is {type(text).__name__}, expected str")
        texts = self.prompt_plan(task=task, prompt_name=prompt_name, prompt=prompt).apply(texts)
        step = batch_size or 65_536
        if step <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        out = np.empty((len(texts), self.table.shape[1]), dtype=np.float32)
        for start in range(0, len(texts), step):
            chunk = texts[start : start + step]
            out[start : start + len(chunk)] = average_matrix(self.token_ids(chunk), len(self.table)) @ self.table
        out = self._finish(out, width)
        if normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out[0] if single else out

    def _finish(self, out: np.ndarray, width: int | None) -> np.ndarray:
        """The averaged rows as the chain ends them: unit length for a normalized model, cut to `width` (if any)."""
        if self.unit:  # the chain's Normalize sees the whole vector, before any cut (as in sentence-transformers)
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return np.ascontiguousarray(out[:, :width]) if width else out

    def encode_query(self, sentences: str | Iterable[str], **options: Any) -> np.ndarray:
        """`encode` with the model's query prompt, when it has one (else its default prompt)."""
        options.setdefault("task", "query")
        return self.encode(sentences, **options)

    def encode_document(self, sentences: str | Iterable[str], **options: Any) -> np.ndarray:
        """`encode` with the model's document prompt, when it has one (else its default prompt)."""
        options.setdefault("task", "document")
        return self.encode(sentences, **options)

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """float32 (n, m): the model's similarity of every row of `a` with every row of `b`."""
        return similarity_matrix(a, b, self.settings.similarity_fn_name)

    def prompt_plan(
        self, *, task: str | None = None, prompt_name: str | None = None, prompt: str | None = None
    ) -> PromptPlan:
        """The prompt text a call puts in front of each input (every token pools: a static model has no Pooling)."""
        return plan_prompt(self.settings, [], task=task, prompt_name=prompt_name, prompt=prompt)

    def weights_digest(self) -> str:
        """sha256 of the table and the tokenizer (shard folders and the server compare it)."""
        digest = hashlib.sha256(self.table.tobytes())
        digest.update(self.tokenizer.to_str().encode())
        digest.update(b"normalize" if self.unit else b"")
        return digest.hexdigest()


# SentenceEncoder.encode options that have nothing to do on the static path.
_ACCEPTED_OPTIONS = {"show_progress", "on_truncation", "batch_tokens", "long_text", "device", "devices", "convert_to"}


def check_static_options(backend: str | None, precision: str, devices: object = None) -> None:
    """One-line errors for options that only a transformer model has."""
    if backend not in (None, "torch", "static"):
        raise BackendError(f"backend {backend!r}: a static model runs on its own numpy path; leave backend unset")
    if precision not in ("auto", "fp32"):
        raise BackendError(f"precision {precision!r}: a static model computes in fp32; leave precision unset")
    if devices:
        raise BackendError("devices: a static model runs in this process; it needs no worker devices")


def _chain_words(root: Path) -> str:
    """Why `root` is not a static chain, in words for a one-line error."""
    names = _module_names(root)
    if names is None:
        return f"no readable {MODULES_FILE}"
    kinds = [kind for _, kind in names]
    if "StaticEmbedding" not in kinds:
        return f"{MODULES_FILE} names no StaticEmbedding"
    return (f"its chain is {' -> '.join(kinds)}; StaticEncoder runs a StaticEmbedding alone or before Normalize, "
            "SentenceEncoder.load runs the whole chain")  # fmt: skip
