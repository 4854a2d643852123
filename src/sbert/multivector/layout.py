"""The multi-vector settings of a model folder, read once: lengths, query expansion, prefixes and skiplist.

Two layouts say the same things in different places:
- sentence-transformers 6 (`model_type` "MultiVectorEncoder"): the Transformer's
  sentence_bert_config.json holds `query_length`, `document_length` and `query_expansion`
  ({strategy, attend, token, length}); the MultiVectorMask module's config.json holds
  `skiplist_words`, `skiplist_tasks` and `keep_only_token_ids`; prefixes are ordinary prompts.
- PyLate (`model_type` "ColBERT", or PyLate's keys): config_sentence_transformers.json holds
  `query_prefix`, `document_prefix` (inserted as one token after the first), `query_length`,
  `document_length`, `do_query_expansion`, `attend_to_expansion_tokens` and `skiplist_words`.
- Stanford ColBERT (`architectures` ["HF_ColBERT"], no modules.json): `artifact.metadata` holds
  `query_token_id` / `doc_token_id` (inserted like PyLate's prefixes), `query_maxlen`, `doc_maxlen`,
  `attend_to_mask_tokens` and `mask_punctuation`; the projection is `linear.weight` in the weights.
Each layout keeps its own library's rules (docs/multivector.md lists where they differ).
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sbert.errors import ModelFormatError
from sbert.formats.layout import MODEL_CONFIG_FILE, TRANSFORMER_CONFIG_FILE, architectures, read_json, read_modules
from sbert.formats.model_config import read_model_config

Flavor = Literal["st", "pylate"]
MASK_MODULE = "MultiVectorMask"
PYLATE_TYPE = "ColBERT"
NATIVE_TYPE = "MultiVectorEncoder"
STANFORD_ARCHITECTURE = "HF_ColBERT"
STANFORD_METADATA = "artifact.metadata"
# PyLate's defaults where its config leaves a key out (pylate/models/colbert.py).
PYLATE_QUERY_LENGTH, PYLATE_DOCUMENT_LENGTH = 32, 180
PYLATE_KEYS = ("query_prefix", "document_prefix", "do_query_expansion", "attend_to_expansion_tokens", "skiplist_words")


@dataclass(frozen=True)
class Expansion:
    """ColBERT query expansion: queries padded to `length` with `token` ([MASK] if None), scored by MaxSim.

    strategy "fixed": every query is exactly `length` tokens (cut or padded); "min": at least `length`.
    attend: whether the encoder attends to the expansion positions (PyLate's attend_to_expansion_tokens).
    """

    length: int = 32
    strategy: Literal["fixed", "min"] = "fixed"
    attend: bool = False
    token: str | None = None

    def config(self) -> dict[str, Any]:
        """sentence-transformers 6's `query_expansion` dict."""
        return {"strategy": self.strategy, "attend": self.attend, "token": self.token, "length": self.length}


@dataclass(frozen=True)
class MultiVectorSettings:
    """How texts become scored token rows; the one place the library, server, index and training ask."""

    flavor: Flavor = "st"
    query_length: int | None = None  # token cap for queries (None: the model's max_seq_length)
    document_length: int | None = None
    expansion: Expansion | None = None
    # PyLate inserts these token ids after the first token; sentence-transformers uses prompts instead
    query_prefix: str = ""
    document_prefix: str = ""
    skiplist_words: tuple[str, ...] = ()
    skiplist_tasks: tuple[str, ...] = ("document",)
    keep_only_token_ids: tuple[int, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)  # unknown mask-config keys, written back

    def length_for(self, task: str | None) -> int | None:
        """The token cap for `task` ("query", else a document)."""
        return self.query_length if task == "query" else self.document_length

    def prefix_for(self, task: str | None) -> str:
        """The token PyLate inserts for `task` ("" for none, and always "" in sentence-transformers' layout)."""
        return self.query_prefix if task == "query" else self.document_prefix


def is_multivector_dir(root: Path) -> bool:
    """Whether a folder holds a multi-vector model in either layout."""
    config = read_model_config(root)
    if config.get("model_type") in (NATIVE_TYPE, PYLATE_TYPE) or any(k in config for k in PYLATE_KEYS):
        return True
    if is_stanford_dir(root):
        return True
    if not (root / "modules.json").is_file():
        return False
    return any(e.class_name == MASK_MODULE or e.type.startswith("pylate.") for e in read_modules(root))


def read_multivector_settings(
    root: Path, transformer_config: dict[str, Any], mask_config: dict[str, Any] | None
) -> MultiVectorSettings:
    """The settings of the model in `root`, in its own layout.

    `transformer_config` is its Transformer's sentence_bert_config.json and `mask_config` its
    MultiVectorMask's config.json (None without one), as those modules read them.
    """
    config = read_model_config(root)
    if config.get("model_type") == PYLATE_TYPE or any(k in config for k in PYLATE_KEYS):
        return _pylate(root, config)
    m_config = mask_config or {}
    path = root / TRANSFORMER_CONFIG_FILE
    expansion = transformer_config.get("query_expansion")
    keep = m_config.get("keep_only_token_ids")
    tasks = m_config.get("skiplist_tasks") or ["document"]
    known = {"skiplist_words", "skiplist_tasks", "keep_only_token_ids"}
    return MultiVectorSettings(
        flavor="st",
        query_length=_length(transformer_config.get("query_length"), path, "query_length"),
        document_length=_length(transformer_config.get("document_length"), path, "document_length"),
        expansion=_expansion(expansion, path) if expansion is not None else None,
        skiplist_words=tuple(str(w) for w in m_config.get("skiplist_words") or ()),
        skiplist_tasks=(tasks,) if isinstance(tasks, str) else tuple(tasks),
        keep_only_token_ids=tuple(int(i) for i in keep) if keep else None,
        extra={k: v for k, v in m_config.items() if k not in known},
    )


def is_stanford_dir(root: Path) -> bool:
    """A Stanford ColBERT checkpoint: config.json names HF_ColBERT and there is no modules.json."""
    return not (root / "modules.json").is_file() and STANFORD_ARCHITECTURE in architectures(root)


def read_stanford_settings(root: Path) -> MultiVectorSettings:
    """The settings of a Stanford ColBERT checkpoint, from artifact.metadata (its defaults where absent).

    As sentence-transformers 6 reads it: markers [unused0] / [unused1] inserted after [CLS], queries
    expanded to query_maxlen (32), documents cut at doc_maxlen when given, punctuation skipped unless
    mask_punctuation is false.
    """
    path = root / STANFORD_METADATA
    meta: Any = read_json(path) if path.is_file() else {}
    if not isinstance(meta, dict):
        raise ModelFormatError(f"{path}: expected a JSON object")
    length = _length(meta.get("query_maxlen"), path, "query_maxlen") or 32
    return MultiVectorSettings(
        flavor="pylate",
        query_length=length,
        document_length=_length(meta.get("doc_maxlen"), path, "doc_maxlen"),
        expansion=Expansion(length=length, attend=bool(meta.get("attend_to_mask_tokens"))),
        query_prefix=str(meta.get("query_token_id") or "[unused0]"),
        document_prefix=str(meta.get("doc_token_id") or "[unused1]"),
        skiplist_words=tuple(string.punctuation) if meta.get("mask_punctuation", True) else (),
    )


def transformer_config(settings: MultiVectorSettings) -> dict[str, Any]:
    """The keys sentence-transformers 6 reads from the Transformer's sentence_bert_config.json."""
    return {
        "module_output_name": "token_embeddings",
        "query_length": settings.query_length,
        "document_length": settings.document_length,
        "query_expansion": settings.expansion.config() if settings.expansion else None,
    }


def mask_config(settings: MultiVectorSettings) -> dict[str, Any]:
    """The MultiVectorMask's config.json, as sentence-transformers 6 writes it."""
    keep = list(settings.keep_only_token_ids) if settings.keep_only_token_ids else None
    return {"skiplist_words": list(settings.skiplist_words), "skiplist_tasks": list(settings.skiplist_tasks),
            "keep_only_token_ids": keep, **settings.extra}  # fmt: skip


def _pylate(root: Path, config: dict[str, Any]) -> MultiVectorSettings:
    path = root / MODEL_CONFIG_FILE
    query_length = _length(config.get("query_length"), path, "query_length") or PYLATE_QUERY_LENGTH
    expand = config.get("do_query_expansion", True) is not False
    attend = bool(config.get("attend_to_expansion_tokens")) and expand
    skiplist = config.get("skiplist_words")
    return MultiVectorSettings(
        flavor="pylate",
        query_length=query_length,
        document_length=_length(config.get("document_length"), path, "document_length") or PYLATE_DOCUMENT_LENGTH,
        expansion=Expansion(length=query_length, attend=attend) if expand else None,
        # None (a key left out) is PyLate's default "[Q] " / "[D] "; "" means no prefix
        query_prefix=_text(config.get("query_prefix", "[Q] "), "[Q] "),
        document_prefix=_text(config.get("document_prefix", "[D] "), "[D] "),
        skiplist_words=tuple(string.punctuation if skiplist is None else (str(w) for w in skiplist)),
    )


def _length(value: Any, path: Path, key: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ModelFormatError(f"{path}: {key} must be an integer >= 2, got {value!r}")
    return value


def _text(value: Any, default: str) -> str:
    return default if value is None else str(value)


def _expansion(value: Any, path: Path) -> Expansion:
    if not isinstance(value, dict) or value.get("strategy") not in ("fixed", "min"):
        raise ModelFormatError(f"{path}: query_expansion must be {{strategy: fixed|min, length: N, ...}}")
    length = _length(value.get("length"), path, "query_expansion.length")
    if length is None:
        raise ModelFormatError(f"{path}: query_expansion needs a length (classic ColBERT uses 32)")
    token = value.get("token")
    return Expansion(length, value["strategy"], bool(value.get("attend", False)), None if token is None else str(token))
