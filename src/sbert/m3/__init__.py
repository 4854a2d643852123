"""BGE-M3: dense, lexical and ColBERT outputs of one forward (FlagEmbedding's layout)."""

from sbert.m3.model import M3Encoder, colbert_score, is_m3_dir, lexical_matching_score, pair_scores

__all__ = ["M3Encoder", "colbert_score", "is_m3_dir", "lexical_matching_score", "pair_scores"]
