"""sentence-transformers' names on sbert's own classes: code written for it runs with only the import changed.

`from sbert import SentenceTransformer, util` (docs/migrating.md). Above the kinds and search: these
classes are thin subclasses that take sentence-transformers' arguments and return its types.
"""

from sbert.compat.sentence_transformer import SentenceTransformer

__all__ = ["SentenceTransformer"]
