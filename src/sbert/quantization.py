"""sentence-transformers 6.2's `sentence_transformers.quantization` path: `quantize_embeddings`.

6.2's `semantic_search_faiss` / `semantic_search_usearch` are not here: `sbert index` builds and searches
quantized indexes itself (docs/search.md).
"""

from __future__ import annotations

from sbert.util import quantize_embeddings

__all__ = ["quantize_embeddings"]
