"""`distill_static`: any SentenceEncoder -> a StaticEncoder (the model2vec recipe, then a corpus fit).

1. Token vectors: the teacher's sentence vector of `[CLS] t [SEP]` for every vocabulary token t.
2. Centred PCA to `dim`, then SIF weights (corpus token counts, or model2vec's Zipf prior by rank
   among the tokens text can produce), folded into the rows so a plain mean over tokens is the
   weighted mean. Without a corpus this is model2vec's distillation: STSb test 66.1 for
   all-MiniLM-L6-v2, model2vec 66.1 (benchmarks/quality/static_tier.py).
3. With a corpus: the teacher's sentence vectors projected on their own top `dim` directions are
   the target; a (dim, dim) map fitted on cosine (from the least-squares map) is folded into the
   table, then the same loss moves the rows of the tokens the corpus uses.

STSb test Spearman for all-MiniLM-L6-v2 on a 95k-sentence SNLI + SST-2 corpus (no STS sentence):
PCA + SIF 67.0, + map 74.1, + rows 77.3; the teacher 82.0 (benchmarks/quality/static_tier.py).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

import numpy as np

from sbert.errors import SbertError
from sbert.static import fit
from sbert.static.model import StaticEncoder, StaticInfo, average_matrix

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder

log = logging.getLogger(__name__)
PLACEHOLDER = re.compile(r"\[unused\d+\]")  # BERT vocabularies' reserved slots (model2vec drops them too)
MIN_CORPUS = 100  # fewer sentences than this cannot fit a (dim x dim) map sensibly
MAP_EPOCHS = 5  # converged by then on 95k sentences (development runs: 5 and 20 epochs, the same Spearman)


def teacher_tokenizer(teacher: SentenceEncoder) -> object:
    """A copy of the teacher's Rust tokenizer (a static model needs a fast tokenizer)."""
    from tokenizers import Tokenizer

    backend = getattr(teacher.transformer.tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise SbertError("distill --static needs a model with a fast (Rust) tokenizer")
    return Tokenizer.from_str(backend.to_str())


def producible(tokenizer: object) -> np.ndarray:
    """(V,) whether text can tokenize to each id: not a `[unusedN]` placeholder, not a special token."""
    vocab: dict[str, int] = tokenizer.get_vocab(with_added_tokens=True)  # type: ignore[attr-defined]
    special = {t.content for t in getattr(tokenizer, "get_added_tokens_decoder", dict)().values() if t.special}
    kept = np.ones(len(vocab), dtype=bool)
    for token, index in vocab.items():
        if index < len(kept) and (token in special or PLACEHOLDER.fullmatch(token)):
            kept[index] = False
    return kept


def token_vectors(
    teacher: SentenceEncoder, vocab_size: int, batch_size: int = 1024, show_progress: bool = False
) -> np.ndarray:
    """(V, D) the teacher's vector of each token alone between its special tokens."""
    from sbert.encoding.engine import embed_rows

    tokenizer = teacher.transformer.tokenizer
    first = [tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id]
    last = [tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id]
    if first[0] is None or last[0] is None:
        first, last = [], []
    ids = [[*first, t, *last] for t in range(vocab_size)]
    # Before any Normalize: PCA and SIF weights then see the token vectors' own lengths.
    pooled = [m for m in teacher.chain() if type(m).__name__ != "Normalize"]
    encoder = type(teacher)(pooled, device=teacher.device)
    dim = encoder.chain_dimension
    return embed_rows(encoder.backend("torch", "fp32"), ids, dim, batch_size=batch_size, show_progress=show_progress)


def distill_static(
    teacher: SentenceEncoder,
    corpus: list[str] | None = None,
    dim: int = 256,
    epochs: int = 3,
    lr: float = 1e-3,
    teacher_name: str = "",
    map_epochs: int = MAP_EPOCHS,
    show_progress: bool = False,
) -> StaticEncoder:
    """The static model of `teacher`: PCA + SIF table, fitted to the teacher on `corpus` when given.

    `map_epochs` / `epochs` of 0 leave out the map fit / the row fit (benchmarks/quality/static_tier.py --ablation).
    `show_progress`: a bar for each teacher pass (the vocabulary, then the corpus), the slow part.
    """
    tokenizer = teacher_tokenizer(teacher)
    vocab = tokenizer.get_vocab_size()  # type: ignore[attr-defined]
    if not 1 <= dim <= teacher.chain_dimension:
        raise SbertError(f"--dim must be between 1 and the teacher's dimension {teacher.chain_dimension}, got {dim}")
    if corpus is not None and len(corpus) < MIN_CORPUS:
        raise SbertError(f"--corpus has {len(corpus)} sentences; the fit needs at least {MIN_CORPUS}")
    log.info("teacher vectors for %d vocabulary tokens", vocab)
    kept = producible(tokenizer)  # placeholders and specials never occur in text: they shape neither PCA nor ranks
    table, _ = fit.pca(token_vectors(teacher, vocab, show_progress=show_progress), dim, fit_rows=kept)
    static = StaticEncoder(tokenizer, table)
    matrix = None if corpus is None else average_matrix(static.token_ids(corpus), vocab)
    if matrix is None:  # model2vec's prior: Zipf by rank among the tokens text can produce
        table *= fit.sif_from_probabilities(fit.zipf_probabilities(kept), fit.ZIPF_A)[:, None]
    else:
        table *= fit.sif_weights(fit.token_counts(matrix))[:, None]
    steps: dict[str, object] = {"pca": dim, "sif": "corpus" if matrix is not None else "zipf"}
    if matrix is not None and corpus is not None:
        log.info("teacher vectors for %d corpus sentences", len(corpus))
        teacher_rows = teacher.encode(corpus, precision="fp32", on_truncation="ignore", show_progress=show_progress)
        target = teacher_rows @ fit.uncentred_basis(teacher_rows, dim)
        table /= max(float(np.linalg.norm(table, axis=1).mean()), 1e-12)  # Adam's steps assume unit scale
        if map_epochs > 0:
            table = table @ fit.fit_map(np.asarray(matrix @ table), target, map_epochs, lr)
        if epochs > 0:
            table = fit.fit_table(table, matrix, target, epochs, lr)
        steps |= {"map_epochs": map_epochs, "row_epochs": epochs, "lr": lr}
    # Unit mean row length: the scale is arbitrary for cosine, and this keeps dot products readable.
    table /= max(float(np.linalg.norm(table, axis=1).mean()), 1e-12)
    info = StaticInfo(teacher=teacher_name, dim=dim, corpus_sentences=len(corpus or []), epochs=epochs, steps=steps)
    return StaticEncoder(tokenizer, table, info)
