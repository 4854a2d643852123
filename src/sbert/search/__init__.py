"""Semantic search: exact top-k, reranking, paraphrase mining, clustering, quantization and a persistent FAISS index."""

from sbert.search.exact import cos_sim, paraphrase_mining, semantic_search
from sbert.search.quantize import calibration_ranges, quantize_embeddings

__all__ = ["calibration_ranges", "cos_sim", "paraphrase_mining", "quantize_embeddings", "semantic_search"]
