"""config_sentence_transformers.json: versions, similarity, prompts, default prompt and truncate_dim.

Prompts are read and written under the keys sentence-transformers uses (`prompts`,
`default_prompt_name`), so a model saved with prompts by either library encodes queries the same
way in the other. A prompt is text put in front of every input: `encode(texts, prompt_name="query")`
embeds "query: " + text when the model's prompts map "query" to "query: ".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sbert.errors import ModelFormatError
from sbert.formats.layout import MODEL_CONFIG_FILE, read_json
from sbert.similarity import DEFAULT_SIMILARITY, check_similarity
from sbert.vectors.maxsim import check_multi_similarity

# encode_query / encode_document (task "query" / "document") use the prompt of that name. sentence-transformers
# 6 gives every model both names ("" unless the folder saves one), so a task never falls back to the default
# prompt, nor to a "passage" or "corpus" prompt: a folder with only those encodes documents with none.
TASKS = ("query", "document")


@dataclass
class EncoderSettings:
    """The model-level settings kept beside the modules."""

    prompts: dict[str, str] = field(default_factory=dict)
    default_prompt_name: str | None = None
    truncate_dim: int | None = None
    similarity_fn_name: str = DEFAULT_SIMILARITY  # cosine, dot, euclidean or manhattan (sbert/similarity.py)
    model_type: str = ""  # "SparseEncoder" for a SPLADE chain: sentence-transformers then loads it as one
    max_active_dims: int | None = None  # a sparse model's saved top-k per row (None: every active dimension)
    activation_fn: str | None = None  # a cross-encoder's score activation, as sentence-transformers 6 saves it

    def resolve_prompt(
        self, *, task: str | None = None, prompt_name: str | None = None, prompt: str | None = None
    ) -> str:
        """The text before each input ("" for none): `prompt`, else the named prompt, else the task's, else the default.

        `task` is "query" or "document" (encode_query / encode_document, the server's input_type): the
        prompt of that name, "" when the model has none (sentence-transformers 6: no default-prompt fallback).
        """
        if prompt is not None:
            return prompt
        if prompt_name is None and task is not None:
            if task not in TASKS:
                raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
            return self.prompts.get(task, "")
        name = prompt_name if prompt_name is not None else self.default_prompt_name
        if name is None:
            return ""
        if name not in self.prompts:
            known = ", ".join(repr(n) for n in self.prompts) or "none"
            raise ValueError(f"unknown prompt_name {name!r}; this model's prompts: {known}")
        return self.prompts[name]


def check_truncate_dim(value: int | None, width: int) -> int | None:
    """A positive dimension no larger than the model's, or None; a one-line ValueError otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= width:
        raise ValueError(f"truncate_dim must be an integer in [1, {width}] for this model, got {value!r}")
    return value


# sentence-transformers' similarity where a folder saves none (null): by the kind of model.
_DEFAULT_SIMILARITY_OF = {"SparseEncoder": "dot", "MultiVectorEncoder": "maxsim", "ColBERT": "maxsim"}
# Kinds scored by late interaction (sentence-transformers 6, PyLate): their own similarity names.
MULTI_VECTOR_TYPES = ("MultiVectorEncoder", "ColBERT")


def _check_similarity(name: str | None, model_type: str) -> str:
    if model_type in MULTI_VECTOR_TYPES:
        return check_multi_similarity(name)
    return check_similarity(name)


def read_model_config(root: Path) -> dict[str, Any]:
    """config_sentence_transformers.json as a dict ({} when absent): the one place the file is parsed.

    Kinds with keys of their own (PyLate's ColBERT lengths and prefixes) read them from this dict.
    """
    path = root / MODEL_CONFIG_FILE
    if not path.is_file():
        return {}
    config = read_json(path)
    if not isinstance(config, dict):
        raise ModelFormatError(f"{path}: expected a JSON object")
    return config


def read_settings(root: Path, model_type: str = "") -> EncoderSettings:
    """The prompts, default prompt, truncate_dim, similarity and top-k recorded in a model folder.

    `model_type` is the kind loading it ("SparseEncoder" for a sparse model): a null or missing
    similarity_fn_name means that kind's default, as in sentence-transformers (dot for sparse).
    """
    path = root / MODEL_CONFIG_FILE
    if not path.is_file():
        return EncoderSettings(similarity_fn_name=_check_similarity(_DEFAULT_SIMILARITY_OF.get(model_type), model_type),
                               model_type=model_type)  # fmt: skip
    config: Any = read_model_config(root)
    prompts = config.get("prompts") or {} if isinstance(config, dict) else None
    if not isinstance(prompts, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in prompts.items()):
        raise ModelFormatError(f"{path}: prompts must map names to strings")
    default = config.get("default_prompt_name")
    if default is not None and default not in prompts:
        raise ModelFormatError(f"{path}: default_prompt_name {default!r} is not among the prompts")
    truncate = config.get("truncate_dim")
    if truncate is not None and (not isinstance(truncate, int) or truncate <= 0):
        raise ModelFormatError(f"{path}: truncate_dim must be a positive integer")
    top_k = config.get("max_active_dims")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k <= 0):
        raise ModelFormatError(f"{path}: max_active_dims must be a positive integer")
    saved_type = config.get("model_type")
    # a multi-vector folder is scored by its own names whoever reads it; otherwise the reader's kind decides
    kind = model_type or (str(saved_type) if saved_type in MULTI_VECTOR_TYPES else "")
    try:
        similarity = _check_similarity(config.get("similarity_fn_name") or _DEFAULT_SIMILARITY_OF.get(kind), kind)
    except ValueError as e:
        raise ModelFormatError(f"{path}: {e}") from None
    activation = config.get("activation_fn")
    return EncoderSettings(dict(prompts), default, truncate, similarity, str(saved_type or model_type), top_k,
                           str(activation) if activation else None)  # fmt: skip


def settings_config(settings: EncoderSettings) -> dict[str, Any]:
    """These settings under sentence-transformers' keys (config_sentence_transformers.json without versions)."""
    out: dict[str, Any] = {
        "similarity_fn_name": settings.similarity_fn_name,
        "prompts": dict(settings.prompts),
        "default_prompt_name": settings.default_prompt_name,
    }
    if settings.truncate_dim is not None:
        out["truncate_dim"] = settings.truncate_dim
    if settings.model_type:
        out["model_type"] = settings.model_type
    if settings.max_active_dims is not None:
        out["max_active_dims"] = settings.max_active_dims
    return out


def model_config(settings: EncoderSettings) -> dict[str, Any]:
    """config_sentence_transformers.json: versions, the similarity function and these settings."""
    import torch
    import transformers

    from sbert.version import __version__

    versions = {"sbert": __version__, "transformers": transformers.__version__, "pytorch": torch.__version__}
    return {"__version__": versions, **settings_config(settings)}
