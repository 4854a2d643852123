"""The dense kind: SentenceEncoder, one vector per text, and the reader of its folder's module chain."""

from sbert.dense.model import SentenceEncoder

__all__ = ["SentenceEncoder"]
