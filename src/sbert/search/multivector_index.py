"""A multi-vector (ColBERT) index: exact MaxSim, and two candidate generators reranked by exact MaxSim.

- "exact":  MaxSim of the query with every document (vectors/maxsim.py, memory-bounded).
- "muvera": one MUVERA encoding per document (vectors/muvera.py); the top `candidates` by dot
            product with the query's encoding are rescored by exact MaxSim.
- "plaid":  PLAID's candidate stage: every token is assigned to one of `n_centroids` k-means
            centroids. A query token probes its `probes` best centroids; a document holding some
            scores, per query token, its best probed centroid's score (summed over query tokens),
            and the best `candidates` are rescored by exact MaxSim. (PLAID's centroid interaction
            and residual decompression stages are left out: on the benchmark corpus, exact MaxSim
            on more candidates bought more recall per second than centroid interaction.)
Token vectors are stored as float16 by default (half the bytes; MaxSim is computed in float32),
or compact (`token_format`, vectors/token_codes.py): int8 with a scale per token (a quarter), or
binary (a thirty-second), which keeps an int8 copy to rescore with: every method's candidates are
then put in order by MaxSim on the int8 tokens, and "exact" first takes `candidates` by binary MaxSim.

Folder: `index.json` (IndexSettings + counts), `tokens.npy`, `offsets.npy` (`scales.npy` for int8;
`rescore_tokens.npy` and `rescore_scales.npy` for binary), and when built, `muvera.npy`,
`centroids.npy`, `codes.npy`; written atomically.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sbert.errors import SbertError
from sbert.formats import layout
from sbert.formats.image_inputs import input_kind
from sbert.search.centroids import assign, token_centroids
from sbert.search.exact import top_k_rows
from sbert.search.index import TEXTS_FILE, open_texts, texts_by_id, write_texts
from sbert.vectors.maxsim import TokenSets, maxsim_matrix
from sbert.vectors.muvera import MuveraParams, encode_documents, encode_queries
from sbert.vectors.token_codes import ResidualCodec

if TYPE_CHECKING:
    from sbert.multivector import MultiVectorEncoder

METHODS = ("exact", "muvera", "plaid")
INDEX_FORMATS = ("float16", "int8", "binary", "residual")
_CODEC_SAMPLE = 262_144  # tokens the residual buckets are fitted on
_ENCODE_BLOCK = 65_536  # tokens compressed at a time: the float residual of a block stays small
INFO_FILE = "index.json"


@dataclass(frozen=True)
class IndexSettings:
    """How the index was built and how it searches by default."""

    dimension: int
    count: int = 0
    muvera: bool = True
    plaid: bool = True
    n_centroids: int = 0  # 0: about 4 * sqrt(number of tokens), a power of two
    probes: int = 8  # PLAID: centroids probed per query token
    candidates: int = 1024  # documents rescored exactly per query
    muvera_bits: int = 4
    muvera_proj: int = 16
    muvera_reps: int = 16
    mean: bool = False  # meanmaxsim instead of maxsim
    model: str = ""
    document_prompt: str = ""
    token_format: str = "float16"  # float16, int8, binary or residual (vectors/token_codes.py)
    residual_bits: int = 2  # residual: bits a dimension beside the centroid id (PLAID's default is 2)
    # "image" when the documents are image files and PDF pages the model embedded as images (the server shows
    # them); "text" otherwise, and for an index written before this was recorded
    documents: str = "text"


class MultiVectorIndex:
    """Token matrices of a corpus plus the structures each search method needs."""

    def __init__(self, docs: TokenSets, settings: IndexSettings, muvera: np.ndarray | None = None,
                 centroids: np.ndarray | None = None, codes: np.ndarray | None = None,
                 rescore: TokenSets | None = None) -> None:  # fmt: skip
        self.docs, self.settings, self.rescore = docs, settings, rescore  # rescore: int8 tokens of a binary index
        self.muvera, self.centroids, self.codes = muvera, centroids, codes
        self._postings: tuple[np.ndarray, np.ndarray] | None = None  # centroid -> documents (CSR)
        self._muvera32: np.ndarray | None = None
        self.db: sqlite3.Connection | None = None  # texts.sqlite, when the index was saved with texts

    @classmethod
    def build(cls, docs: TokenSets, settings: IndexSettings, seed: int = 0) -> MultiVectorIndex:
        """Index `docs` (stored in `settings.token_format`) and build MUVERA encodings and centroids as asked."""
        if len(docs) == 0:
            raise SbertError("cannot build an index of an empty corpus")
        if settings.token_format not in INDEX_FORMATS:
            raise SbertError(f"token_format {settings.token_format}: an index stores {', '.join(INDEX_FORMATS)} tokens")
        if settings.token_format == "residual" and not settings.plaid:
            raise SbertError("token_format residual compresses against the PLAID centroids: build with plaid=True")
        settings = IndexSettings(**{**asdict(settings), "count": len(docs), "dimension": int(docs.tokens.shape[1])})
        params = _muvera_params(settings)
        muvera = encode_documents(docs.tokens, docs.offsets, params).astype(np.float16) if settings.muvera else None
        centroids = codes = None
        if settings.plaid:
            k = settings.n_centroids or _default_centroids(len(docs.tokens))
            centroids = token_centroids(docs.tokens, k, seed=seed)
            codes = assign(docs.tokens, centroids)
            settings = IndexSettings(**{**asdict(settings), "n_centroids": len(centroids)})
        if settings.token_format == "residual":
            assert centroids is not None and codes is not None
            stored = residual_tokens(docs, centroids, codes, settings.residual_bits, seed)
        else:
            stored = docs.compact(settings.token_format)
        rescore = docs.compact("int8") if settings.token_format == "binary" else None
        return cls(stored, settings, muvera, centroids, codes, rescore)

    def search(self, queries: TokenSets, top_k: int = 10, method: str = "exact",
               candidates: int | None = None, probes: int | None = None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """(scores, ids), each (n_queries, top_k), best first; ids -1 where fewer documents qualify."""
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        k = min(top_k, len(self.docs))
        depth = candidates or self.settings.candidates
        if method == "exact" and self.rescore is None:
            return top_k_rows(maxsim_matrix(queries, self.docs, self.settings.mean), k)
        if method == "exact":  # binary codes: candidates by binary MaxSim over the corpus, then the int8 rescoring
            pools = list(
                top_k_rows(maxsim_matrix(queries, self.docs, self.settings.mean), min(depth, len(self.docs)))[1]
            )
        elif method == "muvera":
            pools = self._muvera_pools(queries, depth)
        else:
            pools = self._plaid_pools(queries, depth, probes)
        scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        ids = np.full((len(queries), k), -1, dtype=np.int64)
        for q, pool in enumerate(pools):
            best, top = top_k_rows(self.pool_scores(queries.matrix(q), pool)[None], k)
            scores[q, : best.shape[1]], ids[q, : best.shape[1]] = best[0], pool[top[0]]
        return scores, ids

    def pool_scores(self, query: np.ndarray, pool: np.ndarray) -> np.ndarray:
        """Exact MaxSim of one query matrix with each document in `pool` (the int8 copy of a binary index)."""
        fine = self.rescore if self.rescore is not None else self.docs
        return maxsim_matrix([query], fine.subset(pool), self.settings.mean)[0]

    def _muvera_pools(self, queries: TokenSets, depth: int) -> list[np.ndarray]:
        if self.muvera is None:
            raise SbertError("this index was built without MUVERA encodings (muvera=False)")
        encoded = encode_queries(queries.tokens, queries.offsets, _muvera_params(self.settings))
        if self._muvera32 is None:  # float32 once: a float16 matmul in numpy is many times slower
            self._muvera32 = np.asarray(self.muvera, dtype=np.float32)
        out = []
        for start in range(0, len(encoded), 256):  # (256, width) x (width, n): a bounded block
            scores = encoded[start : start + 256] @ self._muvera32.T
            out += [_best(row, depth) for row in scores]
        return out

    def _plaid_pools(self, queries: TokenSets, depth: int, probes: int | None) -> list[np.ndarray]:
        if self.centroids is None or self.codes is None:
            raise SbertError("this index was built without centroids (plaid=False)")
        starts, docs = self._centroid_postings()
        centroids = np.asarray(self.centroids, dtype=np.float32)
        out = []
        for q in range(len(queries)):
            sims = queries.matrix(q).astype(np.float32) @ centroids.T  # (q tokens, centroids)
            width = min(probes or self.settings.probes, sims.shape[1])
            probed = np.argpartition(-sims, width - 1, axis=1)[:, :width]  # (q tokens, width)
            out.append(_probed_pool(sims, probed, starts, docs, depth))
        return out

    def _centroid_postings(self) -> tuple[np.ndarray, np.ndarray]:
        """For each centroid, the documents holding a token assigned to it (CSR: starts, document ids)."""
        if self._postings is None:
            assert self.codes is not None and self.centroids is not None
            doc_of_token = np.repeat(np.arange(len(self.docs)), self.docs.lengths)
            pairs = np.unique(self.codes.astype(np.int64) * len(self.docs) + doc_of_token)
            centroid, doc = np.divmod(pairs, len(self.docs))
            starts = np.searchsorted(centroid, np.arange(len(self.centroids) + 1))
            self._postings = (starts, doc)
        return self._postings

    def save(self, folder: str | os.PathLike[str], texts: Sequence[str] | None = None) -> None:
        """Write the folder atomically (with `texts`, row i's text, in texts.sqlite)."""
        if texts is not None and len(texts) != len(self.docs):
            raise ValueError(f"{len(texts)} texts for {len(self.docs)} documents")
        with layout.atomic_directory(folder) as tmp:
            if texts is not None:
                write_texts(tmp / TEXTS_FILE, texts)
            np.save(tmp / "tokens.npy", self.docs.tokens)
            np.save(tmp / "offsets.npy", self.docs.offsets)
            extra = {"scales": self.docs.scales}
            if self.docs.codec is not None:  # the centroids and ids are saved already (centroids.npy, codes.npy)
                extra |= {"residual_cutoffs": self.docs.codec.cutoffs, "residual_weights": self.docs.codec.weights}
            if self.rescore is not None:
                extra |= {"rescore_tokens": self.rescore.tokens, "rescore_scales": self.rescore.scales}
            for name, part in extra.items():
                if part is not None:
                    np.save(tmp / f"{name}.npy", part)
            for name, array in (("muvera", self.muvera), ("centroids", self.centroids), ("codes", self.codes)):
                if array is not None:
                    np.save(tmp / f"{name}.npy", array)
            layout.write_json(tmp / INFO_FILE, asdict(self.settings))

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> MultiVectorIndex:
        """Open a folder `save` wrote (arrays memory-mapped)."""
        root = Path(folder)
        if not (root / INFO_FILE).is_file():
            raise SbertError(f"{root}: no multi-vector index here (missing {INFO_FILE})")
        try:
            settings = IndexSettings(**layout.read_json(root / INFO_FILE))
        except TypeError as e:
            raise SbertError(f"{root / INFO_FILE}: malformed ({e})") from None

        def array(name: str) -> np.ndarray | None:
            path = root / f"{name}.npy"
            return np.load(path, mmap_mode="r") if path.is_file() else None

        tokens, offsets = array("tokens"), array("offsets")
        if tokens is None or offsets is None or len(offsets) != settings.count + 1:
            raise SbertError(f"{root}: tokens.npy / offsets.npy missing or not matching {INFO_FILE}; rebuild it")
        offsets = np.asarray(offsets)
        bits = settings.dimension if settings.token_format == "binary" else None
        docs = TokenSets(tokens, offsets, array("scales"), bits)
        if settings.token_format == "residual":
            docs = TokenSets(tokens, offsets, ids=array("codes"), codec=_saved_codec(root, settings, array))
        fine_tokens = array("rescore_tokens")
        rescore = TokenSets(fine_tokens, offsets, array("rescore_scales")) if fine_tokens is not None else None
        index = cls(docs, settings, array("muvera"), array("centroids"), array("codes"), rescore)
        if (root / TEXTS_FILE).is_file():
            index.db = open_texts(root / TEXTS_FILE)
        return index

    def texts(self, ids: Sequence[int]) -> dict[int, str]:
        """Texts by id ({} for an index saved without texts)."""
        return texts_by_id(self.db, ids) if self.db is not None else {}


def is_multivector_index(folder: str | os.PathLike[str]) -> bool:
    """Whether `folder` holds an index this module wrote (its token matrices)."""
    return (Path(folder) / "offsets.npy").is_file() and (Path(folder) / INFO_FILE).is_file()


def index_texts(
    model: MultiVectorEncoder, texts: Sequence[str], out: str | os.PathLike[str], model_name: str,
    settings: IndexSettings | None = None, encode: dict[str, Any] | None = None,
) -> IndexSettings:  # fmt: skip
    """Encode `texts` as documents, build every search method's structures and save the folder with the texts.

    `encode`: the encode options (backend, precision, batch_tokens) the documents are embedded with.
    """
    index = build_text_index(model, texts, model_name, settings, encode)
    index.save(out, texts)
    return index.settings


def build_text_index(
    model: MultiVectorEncoder, texts: Sequence[str], model_name: str, settings: IndexSettings | None = None,
    encode: dict[str, Any] | None = None,
) -> MultiVectorIndex:  # fmt: skip
    """`texts` encoded as documents and indexed, the settings naming the model, its document prompt and MaxSim."""
    docs = model.encode_document(list(texts), output="packed", **(encode or {}))  # float32; stored in its own format
    base = settings or IndexSettings(dimension=model.embedding_dimension)
    prompt = model.settings.resolve_prompt(task="document")
    kinds = {input_kind(text) for text in texts}
    base = IndexSettings(**{**asdict(base), "model": model_name, "document_prompt": prompt,
                            "mean": model.similarity_fn_name == "meanmaxsim",
                            "documents": "image" if kinds == {"image"} else "text"})  # fmt: skip
    return MultiVectorIndex.build(docs, base)


def _probed_pool(sims: np.ndarray, probed: np.ndarray, starts: np.ndarray, docs: np.ndarray, keep: int) -> np.ndarray:
    """The `keep` documents with the best probed-centroid score (PLAID's first stage).

    A document's score: for each query token, the best score among the token's probed centroids the
    document holds (0 if none), summed. Documents without any probed centroid are not candidates.
    """
    n_tokens = sims.shape[0]
    pairs = [(i, int(c)) for i in range(n_tokens) for c in probed[i]]
    sizes = np.array([starts[c + 1] - starts[c] for _, c in pairs])
    if sizes.sum() == 0:
        return np.zeros(0, dtype=np.int64)
    hit_docs = np.concatenate([docs[starts[c] : starts[c + 1]] for _, c in pairs])
    hit_token = np.repeat([i for i, _ in pairs], sizes)
    hit_score = np.repeat([sims[i, c] for i, c in pairs], sizes).astype(np.float32)
    key = hit_docs * n_tokens + hit_token  # one slot per (document, query token)
    order = np.lexsort((-hit_score, key))  # best score first within each slot
    first = np.r_[True, np.diff(key[order]) != 0]
    best_docs, best_scores = hit_docs[order][first], hit_score[order][first]
    pool, at = np.unique(best_docs, return_inverse=True)
    totals = np.bincount(at, weights=best_scores, minlength=len(pool))
    return pool[_best(totals, keep)] if len(pool) > keep else pool


def residual_tokens(docs: TokenSets, centroids: np.ndarray, codes: np.ndarray, bits: int, seed: int) -> TokenSets:
    """`docs` as centroid ids plus `bits` a dimension of residual, compressed a block of tokens at a time."""
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(len(docs.tokens), min(len(docs.tokens), _CODEC_SAMPLE), replace=False))
    codec = ResidualCodec.fit(docs.tokens[sample], codes[sample], centroids, bits)
    parts = [codec.encode(docs.tokens[s : s + _ENCODE_BLOCK], codes[s : s + _ENCODE_BLOCK])
             for s in range(0, len(docs.tokens), _ENCODE_BLOCK)]  # fmt: skip
    return TokenSets(np.concatenate(parts), docs.offsets, ids=codes, codec=codec)


def _saved_codec(root: Path, settings: IndexSettings, array: Callable[[str], np.ndarray | None]) -> ResidualCodec:
    """The residual codec a saved index was compressed with (its centroids and bucket tables)."""
    parts = [array(name) for name in ("centroids", "residual_cutoffs", "residual_weights", "codes")]
    if any(p is None for p in parts):
        raise SbertError(f"{root}: a residual index needs centroids, residual tables and codes; rebuild it")
    centroids, cutoffs, weights, _ = parts
    return ResidualCodec(np.asarray(centroids), np.asarray(cutoffs), np.asarray(weights), settings.residual_bits)


def _muvera_params(settings: IndexSettings) -> MuveraParams:
    return MuveraParams(settings.dimension, settings.muvera_bits, settings.muvera_proj, settings.muvera_reps)


def _default_centroids(n_tokens: int) -> int:
    """A power of two near 4 * sqrt(tokens) (PLAID uses 16 * sqrt; fewer keeps the build cheap on a CPU)."""
    return int(2 ** max(4, round(np.log2(4 * np.sqrt(max(n_tokens, 1))))))


def _best(scores: np.ndarray, depth: int) -> np.ndarray:
    """Indices of the `depth` largest scores (any order)."""
    if depth >= len(scores):
        return np.arange(len(scores))
    return np.argpartition(-scores, depth - 1)[:depth]
