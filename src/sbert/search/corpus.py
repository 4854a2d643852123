"""Build an index from a text corpus: stream embeddings to resumable shards, then index them."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sbert.formats.image_inputs import input_kind
from sbert.scale.streaming import encode_to_disk, load_shards
from sbert.search.index import IndexInfo, build_index, index_scale
from sbert.similarity import similarity_of

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder
    from sbert.static import StaticEncoder


def shards_folder(out_dir: str | os.PathLike[str]) -> Path:
    """Where the embeddings of an index under construction wait (kept until the index is written)."""
    out = Path(out_dir).resolve()
    return out.with_name(f".{out.name}.shards")


def document_kind(model: Any, texts: Sequence[str]) -> str:
    """The documents' kind: image when the model embedded `texts` as image files (image paths), else text."""
    embeds_images = "image" in getattr(model, "modalities", ("text",))
    return "image" if embeds_images and texts and input_kind(texts[0]) == "image" else "text"


def index_corpus(
    model: SentenceEncoder | StaticEncoder,
    model_name: str,
    texts: Sequence[str],
    out_dir: str | os.PathLike[str],
    kind: str = "hnsw",
    backend: str = "torch",
    shard_size: int = 100_000,
    show_progress: bool = True,
    precision: str = "auto",
    rescore_vectors: bool = True,
) -> IndexInfo:
    """Embed `texts` (id = position) with the model's document prompt and write the index folder.

    A kill during the long encoding step loses at most one shard: rerunning the same command
    resumes from the shards already on disk. index.json records the document prompt, which
    `SearchIndex.check_prompt` compares at search time.
    """
    work = shards_folder(out_dir)
    similarity = similarity_of(model)
    index_scale(similarity)  # refuses a model the index cannot rank for before any encoding
    encode_to_disk(
        model,
        texts,
        work,
        shard_size,
        normalize=similarity == "cosine",
        backend=backend,
        precision=precision,
        show_progress=show_progress,
        task="document",
    )
    prompt = model.prompt_plan(task="document").text
    info = build_index(load_shards(work), texts, out_dir, kind, model_name, model.weights_digest(), rescore_vectors,
                       document_prompt=prompt, similarity=similarity,
                       dtype=held if isinstance(held := getattr(model, "held_dtype", None), str) else None,
                       documents=document_kind(model, texts))  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)
    return info
