"""The paper's BERT cross-encoder baseline (Table 2) is `sbert.CrossEncoder` itself.

Both sentences go through the transformer together; every pair needs its own forward pass, so
finding the closest pair among n sentences costs n(n-1)/2 passes (the paper's 65 hours for
n = 10,000; `benchmarks/pair_search_cost.py` measures it on this machine). Kept as a name so
baseline code reads `from sbert.baselines.cross_encoder import CrossEncoder`.
"""

from __future__ import annotations

from sbert.cross_encoder import CrossEncoder

__all__ = ["CrossEncoder"]
