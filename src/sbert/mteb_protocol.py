"""mteb 2.x evaluates sbert models as they are: its EncoderProtocol and CrossEncoderProtocol on every kind.

mteb calls `encode(DataLoader, task_metadata=..., hf_split=..., hf_subset=..., prompt_type=...)` and
`predict(inputs1=DataLoader, inputs2=DataLoader, ...)`, and reads `mteb_model_meta`; a multi-vector
model is also mteb's SearchProtocol (`index` / `search`, `MtebMultiVector`), as mteb's own
sentence-transformers MultiVectorWrapper is, since its token matrices do not stack into one array. The kinds'
`encode` / `predict` carry `mteb_entry`, which hands such calls here: the texts come out of mteb's
batches, mteb's own rule picks the prompt name (task name + type, task, type), and the one prompt
policy turns it into text. mteb is imported only when mteb itself calls: never by the base install.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypeVar, cast

import numpy as np

from sbert.similarity import pairwise_similarity

F = TypeVar("F", bound=Callable[..., Any])
# The keywords only mteb's calls carry: a call with one of them is mteb's.
MTEB_KEYWORDS = ("task_metadata", "hf_split", "hf_subset", "prompt_type")


def mteb_entry(method: F) -> F:
    """Route mteb's calls of `encode` / `predict` (they carry task_metadata) to the mteb adapters here."""

    @functools.wraps(method)
    def entry(self: Any, *args: Any, **options: Any) -> Any:
        if "task_metadata" not in options:
            return method(self, *args, **options)
        if "inputs1" in options:
            return _predict(functools.partial(method, self), options)
        return _encode(self, functools.partial(method, self), args[0] if args else options.pop("inputs"), options)

    return cast(F, entry)


def _texts(batches: Iterable[dict[str, Any]]) -> list[str]:
    """Every text of mteb's DataLoader of {"text": [...]} batches, in order."""
    return [text for batch in batches for text in batch["text"]]


def _call_options(options: dict[str, Any]) -> dict[str, Any]:
    """Mteb's encode kwargs as ours: batch_size kept, its progress flag renamed; other precisions refused."""
    for key in MTEB_KEYWORDS:
        options.pop(key, None)
    precision = options.pop("precision", None)
    if precision not in (None, "float32"):
        raise ValueError(f"mteb precision {precision!r}: sbert answers float32 rows (quantize them afterwards)")
    out: dict[str, Any] = {"show_progress": bool(options.pop("show_progress_bar", False))}
    if options.get("batch_size") is not None:
        out["batch_size"] = int(options.pop("batch_size"))
    return out


def _prompt_name(prompts: dict[str, str], task_metadata: Any, prompt_type: Any) -> str | None:
    """Mteb's prompt choice among the model's prompts (the same rule its sentence-transformers wrapper applies)."""
    from mteb.models.abs_encoder import AbsEncoder, get_prompt_name

    valid, _ = AbsEncoder.validate_task_to_prompt_name(dict(prompts) or None, raise_for_invalid_keys=False)
    return get_prompt_name(valid, task_metadata, prompt_type) if valid else None


def _encode(model: Any, encode: Callable[..., Any], inputs: Any, options: dict[str, Any]) -> Any:
    """float32 rows for mteb: the prompt mteb's rule names, else the query / document task's prompt."""
    task_metadata, prompt_type = options.get("task_metadata"), options.get("prompt_type")
    kind = getattr(prompt_type, "value", prompt_type)  # PromptType.query -> "query"
    call = _call_options(options)
    name = _prompt_name(model.settings.prompts, task_metadata, prompt_type)
    texts = _texts(inputs)
    task = kind if kind in ("query", "document") else None  # the task still picks a route or query rules
    vectors = encode(texts, prompt_name=name, task=task, **call)
    if hasattr(vectors, "toarray"):  # a sparse model's CSR rows: mteb's evaluators take dense arrays
        vectors = vectors.toarray()
    if isinstance(vectors, list):  # a multi-vector model's (n_tokens, dim) matrices, one per text
        return [np.asarray(v, dtype=np.float32) for v in vectors]
    return np.asarray(vectors, dtype=np.float32)


def _predict(predict: Callable[..., Any], options: dict[str, Any]) -> np.ndarray:
    """One score per (inputs1[i], inputs2[i]) pair, as mteb's cross-encoder wrapper scores them."""
    queries, documents = _texts(options.pop("inputs1")), _texts(options.pop("inputs2"))
    call = _call_options(options)
    return np.asarray(predict(list(zip(queries, documents, strict=True)), **call), dtype=np.float32)


def model_meta(name: str, embed_dim: int | None, max_tokens: int | None, similarity: str | None) -> Any:
    """Mteb's ModelMeta for an sbert model (what its sentence-transformers wrapper records for one)."""
    from mteb.models.model_meta import ModelMeta, ScoringFunction

    return ModelMeta.create_empty(overwrites={
        "name": name, "revision": None, "max_tokens": max_tokens, "embed_dim": embed_dim,
        "similarity_fn_name": ScoringFunction.from_str(similarity) if similarity else None,
        "framework": ["PyTorch"],
    })  # fmt: skip


def folder_name(model: Any) -> str:
    """The model's name for mteb's results: `sbert/` and the folder it came from ("sbert/model" when new)."""
    source = model.source_dir
    return f"sbert/{source.name}" if source is not None else "sbert/model"


class MtebEncoder:
    """mteb's EncoderProtocol attributes on an encoder kind: `mteb_model_meta` and `similarity_pairwise`.

    The kind provides `settings` (its similarity), `embedding_dimension`, `source_dir` and
    `max_seq_length` (None for a static model); its `encode` carries `mteb_entry`.
    """

    settings: Any
    source_dir: Any
    pair_scorer: ClassVar[bool] = False  # it embeds texts; evaluators compare the vectors

    @property
    def mteb_model_meta(self) -> Any:
        """Mteb's ModelMeta for this model."""
        model = cast(Any, self)  # a kind: the contract's attributes
        return model_meta(folder_name(self), int(model.embedding_dimension), model.max_seq_length,
                          self.settings.similarity_fn_name)  # fmt: skip

    def similarity_pairwise(self, a: Any, b: Any) -> np.ndarray:
        """float32 (n,): the model's similarity of row i of `a` with row i of `b`."""
        return pairwise_similarity(np.asarray(a), np.asarray(b), self.settings.similarity_fn_name)


class MtebCrossEncoder:
    """mteb's CrossEncoderProtocol attribute on the cross-encoder: `mteb_model_meta` (`predict` carries mteb_entry)."""

    source_dir: Any
    pair_scorer: ClassVar[bool] = True  # it scores a pair at once; evaluators ask it for scores, not vectors

    @property
    def mteb_model_meta(self) -> Any:
        """Mteb's ModelMeta for this model."""
        return model_meta(folder_name(self), None, cast(Any, self).max_seq_length, None)


class MtebMultiVector:
    """mteb's SearchProtocol on the multi-vector kind: `index` keeps the corpus, `search` scores it by MaxSim.

    The corpus is encoded by chunks during `search` (mteb's own chunked search and rerank helpers,
    the ones its MultiVectorWrapper runs), with the kind's `encode` (its mteb entry) and `similarity`.
    """

    corpus_chunk_size: ClassVar[int] = 50_000
    source_dir: Any

    @property
    def mteb_model_meta(self) -> Any:
        """Mteb's ModelMeta for this model (scored by MaxSim)."""
        model = cast(Any, self)
        return model_meta(folder_name(self), int(model.embedding_dimension), model.max_seq_length, "MaxSim")

    def index(self, corpus: Any, **_options: Any) -> None:
        """Keep the corpus; its documents are encoded by chunks when `search` runs."""
        self.__dict__["_mteb_corpus"] = corpus

    def search(
        self, queries: Any, *, task_metadata: Any, hf_split: str, hf_subset: str, top_k: int,
        encode_kwargs: dict[str, Any], top_ranked: Any = None, num_proc: int | None = None, timer: Any = None,
        **_options: Any,
    ) -> dict[str, dict[str, float]]:  # fmt: skip
        """{query id: {document id: MaxSim}}: each query's `top_k` documents, or its `top_ranked` ones rescored."""
        from mteb._create_dataloaders import create_dataloader
        from mteb.models.search_wrappers import chunked_full_corpus_search, rerank_top_ranked_documents
        from mteb.timing import TimingStack
        from mteb.types import PromptType

        corpus = self.__dict__.pop("_mteb_corpus", None)
        if corpus is None:
            raise ValueError("mteb: index the corpus before searching it")
        timer = timer or TimingStack()
        where = {"task_metadata": task_metadata, "hf_split": hf_split, "hf_subset": hf_subset}
        loader = create_dataloader(queries, task_metadata=task_metadata, prompt_type=PromptType.query,
                                   batch_size=encode_kwargs.get("batch_size", 32), num_proc=num_proc)  # fmt: skip
        with timer("Encoding queries", split=hf_split, subset=hf_subset):
            tokens = self._mteb_tokens(loader, prompt_type=PromptType.query, **where, **encode_kwargs)
        ids = {i: row["id"] for i, row in enumerate(queries)}
        common = {"task_corpus": corpus, "query_idx_to_id": ids, "query_embeddings": tokens, "top_k": top_k,
                  "encode_kwargs": encode_kwargs, "encode_fn": self._mteb_tokens,
                  "similarity_fn": cast(Any, self).similarity, "num_proc": num_proc, "timer": timer,
                  **where}  # fmt: skip
        if top_ranked is not None:
            heaps = rerank_top_ranked_documents(top_ranked=top_ranked, **common)
        else:
            heaps = chunked_full_corpus_search(corpus_chunk_size=self.corpus_chunk_size, **common)
        return {qid: {doc: score for score, doc in heaps.get(qid, [])} for qid in ids.values()}

    def _mteb_tokens(self, inputs: Any, **options: Any) -> Any:
        """The token matrices of mteb's DataLoader, through the kind's encode (its mteb entry picks the prompt)."""
        return cast(Any, self).encode(inputs, **options)
