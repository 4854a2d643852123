"""Semantic search: exact top-k, paraphrase mining, clustering and a persistent FAISS index."""

from sbert.search.exact import cos_sim, paraphrase_mining, semantic_search

__all__ = ["cos_sim", "paraphrase_mining", "semantic_search"]
