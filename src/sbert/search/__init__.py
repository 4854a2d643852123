"""Exact semantic search and paraphrase mining over embedding matrices."""

from sbert.search.exact import cos_sim, paraphrase_mining, semantic_search

__all__ = ["cos_sim", "paraphrase_mining", "semantic_search"]
