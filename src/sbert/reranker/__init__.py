"""The cross-encoder kind: a classification transformer (or an LLM's logits) that scores a pair of texts at once.

`sbert.reranker.CrossEncoder` is sbert's own class (what `sbert.load`, the server and the index use);
`sbert.cross_encoder` holds sentence-transformers 6.2's module paths over it (the drop-in class, trainer,
losses and evaluators).
"""

from sbert.reranker.model import ACTIVATIONS, CrossEncoder

__all__ = ["ACTIVATIONS", "CrossEncoder"]
