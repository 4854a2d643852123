"""sentence-transformers' names on sbert's own classes: code written for it runs with only the import changed.

`from sbert import SentenceTransformer, CrossEncoder, SparseEncoder, MultiVectorEncoder, util`
(docs/migrating.md). Above the kinds and search: these classes are thin subclasses that take
sentence-transformers' arguments and return its types; the native classes (`sbert.SentenceEncoder`,
`sbert.reranker.CrossEncoder`, `sbert.sparse.SparseEncoder`, `sbert.multivector.MultiVectorEncoder`)
are what `sbert.load`, the server, the index and the CLI use.
"""

from sbert.compat.cross_encoder import CrossEncoder
from sbert.compat.multi_vector import MultiVectorEncoder
from sbert.compat.sentence_transformer import SentenceTransformer
from sbert.compat.sparse_encoder import SparseEncoder
from sbert.compat.trainer import SentenceTransformerTrainer

SentenceTransformerTrainer.model_class = SentenceTransformer  # here, so neither module imports the other

__all__ = ["CrossEncoder", "MultiVectorEncoder", "SentenceTransformer", "SparseEncoder"]
