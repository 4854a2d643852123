"""The SPLADE encode engine: MLM logits for real tokens only, a chunk at a time, pooled as they come.

A padded batch of 32 texts x 256 tokens x 30,522 logits is 1 GB of floats, and most of it is
padding. Here the backbone runs on the padded batch (B, T, H), its real tokens are gathered (N, H),
and the vocabulary head runs on `chunk` of them at a time: each chunk's weights fold into the
(B, V) result at once, so memory is B x V + chunk x V whatever the lengths.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse
import torch
from torch import Tensor

from sbert.errors import SbertError
from sbert.modules.base import Features
from sbert.sparse.mlm import MLMTransformer
from sbert.sparse.splade import SpladePooling, pool_padded, pool_rows_into, splade_weights

CHUNK_TOKENS = 512  # tokens per head call: 512 x 30,522 floats = 62 MB


@torch.inference_mode()
def splade_batch(mlm: MLMTransformer, pooling: SpladePooling, features: Features, chunk: int = CHUNK_TOKENS) -> Tensor:
    """SPLADE vectors (B, V) of one padded batch, the head run on real tokens only."""
    split = mlm.split()
    mask = features["attention_mask"]
    inputs = {k: features[k] for k in mlm.model_inputs if k in features}
    if split is None:  # an unknown head: the whole model on the padded batch
        logits = mlm.auto_model(**inputs, return_dict=True).logits
        return pool_padded(logits, mask, pooling.pooling_strategy, pooling.activation_function)
    backbone, head = split
    hidden = backbone(**inputs, return_dict=True).last_hidden_state  # (B, T, H)
    real = mask.bool()
    tokens = hidden[real]  # (N, H): padding never reaches the head
    rows = torch.arange(mask.shape[0], device=mask.device).unsqueeze(1).expand_as(mask)[real]  # (N,)
    out = torch.zeros(mask.shape[0], mlm.vocab_size, dtype=hidden.dtype, device=hidden.device)
    for start in range(0, tokens.shape[0], chunk):
        weights = splade_weights(head(tokens[start : start + chunk]), pooling.activation_function)
        pool_rows_into(out, weights, rows[start : start + chunk], pooling.pooling_strategy)
    return out


def top_k(vectors: Tensor, k: int | None) -> Tensor:
    """Keep each row's k largest weights (all of them for None)."""
    if k is None or k >= vectors.shape[1]:
        return vectors
    values, index = vectors.topk(k, dim=1)
    return torch.zeros_like(vectors).scatter_(1, index, values)


def to_csr(vectors: Tensor) -> scipy.sparse.csr_matrix:
    """A (B, V) tensor of mostly zeros as a float32 CSR matrix (only the non-zero weights stored)."""
    dense = vectors.float().cpu()
    rows, cols = dense.nonzero(as_tuple=True)
    values = dense[rows, cols].numpy()
    return scipy.sparse.csr_matrix((values, (rows.numpy(), cols.numpy())), shape=tuple(dense.shape), dtype=np.float32)


def csr_to_torch(rows: scipy.sparse.csr_matrix) -> Tensor:
    """CSR rows as a coalesced float32 torch sparse COO tensor of the same shape."""
    coo = rows.tocoo()
    index = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
    values = torch.from_numpy(coo.data.astype(np.float32, copy=False))
    return torch.sparse_coo_tensor(index, values, coo.shape).coalesce()


def check_k(k: int | None) -> int | None:
    """`max_active_dims` checked: None, or a positive integer (a one-line error otherwise)."""
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k <= 0):
        raise SbertError(f"max_active_dims={k!r}: must be a positive integer")
    return k


def top_k_csr(rows: scipy.sparse.csr_matrix, k: int | None) -> scipy.sparse.csr_matrix:
    """Keep each CSR row's k largest weights."""
    if k is None:
        return rows
    out = rows.tolil()
    for i in range(rows.shape[0]):
        start, end = rows.indptr[i], rows.indptr[i + 1]
        if end - start > k:
            drop = rows.indices[start:end][np.argsort(-rows.data[start:end], kind="stable")[k:]]
            out[i, drop] = 0
    result = out.tocsr()
    result.eliminate_zeros()
    return result
