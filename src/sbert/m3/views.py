"""BGE-M3's three outputs as sbert's own kinds, sharing its weights: what the server, the indexes and the CLI ask.

- `dense_view`: a SentenceEncoder (Transformer, CLS pooling, Normalize): FlagEmbedding's dense vector, with
  the whole dense contract (every server dialect, the dense index, hybrid search, quantized formats).
- `colbert_view`: a MultiVectorEncoder (Transformer, the ColBERT head as a token Dense, Normalize) that scores
  every token but [CLS] (a skiplist of the CLS id on both sides; a literal CLS token inside a text is dropped
  too, where FlagEmbedding would keep it), compared by MeanMaxSim as FlagEmbedding's colbert_score.
- `LexicalView`: the lexical weights as one CSR row over the vocabulary per text: what the sparse routes and
  an index's sparse side (`sbert index build --sparse-model BGE-M3`, hybrid search) ask of a sparse model.

The views hold the M3 model's own modules (no copy): a change to its weights is a change to theirs. Each call
runs one forward for the output it asks; `M3Encoder.encode` gives all three from one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse
from torch import nn

from sbert.formats.model_config import EncoderSettings
from sbert.sparse.engine import check_k, top_k_csr

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder
    from sbert.m3.model import M3Encoder
    from sbert.multivector import MultiVectorEncoder


def dense_view(m3: M3Encoder) -> SentenceEncoder:
    """The dense output as a SentenceEncoder on the same Transformer: CLS pooling, unit length."""
    from sbert.dense.model import SentenceEncoder
    from sbert.modules import Normalize, Pooling

    width = m3.transformer.embedding_dimension
    view = SentenceEncoder([m3.transformer, Pooling(width, "cls"), Normalize()], device=m3.device)
    view.source_dir = m3.source_dir
    return view


def colbert_view(m3: M3Encoder) -> MultiVectorEncoder:
    """The ColBERT output as a MultiVectorEncoder on the same Transformer and head: every token after [CLS]."""
    from sbert.modules import Dense, Normalize
    from sbert.multivector import MultiVectorEncoder
    from sbert.multivector.engine import TOKENS
    from sbert.multivector.layout import MultiVectorSettings

    head = m3.colbert_linear
    dense = Dense(head.in_features, head.out_features, module_input_name=TOKENS, module_output_name=TOKENS)
    dense.linear = head  # the M3 model's own head, not a copy
    cls_token = m3.transformer.tokenizer.cls_token
    settings = MultiVectorSettings(skiplist_words=(cls_token,), skiplist_tasks=("query", "document"))
    view = MultiVectorEncoder([m3.transformer, dense, Normalize(TOKENS)], settings, device=m3.device)
    view.settings.similarity_fn_name = "meanmaxsim"  # FlagEmbedding's colbert_score divides by the query's tokens
    view.source_dir = m3.source_dir
    return view


class LexicalView(nn.Module):
    """The lexical weights as a sparse model gives them: (n, vocabulary) float32 CSR rows.

    A module holding the M3 model, so an index's sparse side can check the weights' digest.
    """

    def __init__(self, m3: M3Encoder) -> None:
        super().__init__()
        self.m3 = m3
        self.settings = EncoderSettings()  # no prompts: BGE-M3 has none

    @property
    def max_seq_length(self) -> int:
        """Texts are cut at this many tokens."""
        return self.m3.max_seq_length

    @property
    def embedding_dimension(self) -> int:
        """The vocabulary's size: a row's width."""
        return len(self.m3.transformer.tokenizer)

    def token_lengths(
        self, texts: Sequence[str], task: str | None = None, prompt_name: str | None = None
    ) -> tuple[list[int], list[int]]:
        """Tokens per text as the encoder sees them, and the indices of the texts cut (no prompts to count)."""
        ids, cut = self.m3.transformer.token_ids(list(texts), self.max_seq_length)
        return [len(row) for row in ids], cut

    def encode(
        self, texts: Sequence[str], task: str | None = None, prompt_name: str | None = None
    ) -> scipy.sparse.csr_matrix:
        """One CSR row per text: each kept token id's weight (FlagEmbedding's lexical_weights)."""
        weights = self.m3.encode(list(texts), return_dense=False, return_sparse=True)["lexical_weights"]
        indptr = np.cumsum([0, *(len(w) for w in weights)])
        columns = np.array([int(token) for w in weights for token in w], dtype=np.int64)
        values = np.array([value for w in weights for value in w.values()], dtype=np.float32)
        shape = (len(weights), self.embedding_dimension)
        rows = scipy.sparse.csr_matrix((values, columns, indptr), shape=shape, dtype=np.float32)
        rows.sort_indices()
        return rows

    def encode_query(self, texts: Sequence[str], max_active_dims: int | None = None) -> scipy.sparse.csr_matrix:
        """Queries' rows: BGE-M3 encodes both sides alike, so as documents."""
        return self.encode_document(texts, max_active_dims)

    def encode_document(self, texts: Sequence[str], max_active_dims: int | None = None) -> scipy.sparse.csr_matrix:
        """Documents' rows, each cut to its `max_active_dims` largest weights."""
        return top_k_csr(self.encode(texts), check_k(max_active_dims))
