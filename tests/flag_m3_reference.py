"""FlagEmbedding's BGEM3FlagModel on a folder, run in its own venv (`make test-e2e` builds .venv-flag).

FlagEmbedding 1.4.2 needs transformers <= 5.9 (it imports `transformers.modeling_attn_mask_utils`), so it
cannot share sbert's environment; tests/test_m3_flag.py runs this file with that venv's Python:

    python tests/flag_m3_reference.py ASK.json ANSWER.json

ASK: {"folder", "texts", "max_length", "pairs", "weights" (a list of weightings)}. ANSWER: the three outputs of
`encode` (one call, all three asked), and `compute_score` of the pairs with FlagEmbedding's default and each of
the given weightings.
This file imports nothing from sbert.
"""

from __future__ import annotations

import json
import sys

from FlagEmbedding import BGEM3FlagModel


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        ask = json.load(f)
    model = BGEM3FlagModel(ask["folder"], use_fp16=False, devices=["cpu"])
    out = model.encode(ask["texts"], batch_size=3, max_length=ask["max_length"], return_dense=True,
                       return_sparse=True, return_colbert_vecs=True)  # fmt: skip
    pairs = [tuple(p) for p in ask["pairs"]]
    length = ask["max_length"]
    answer = {
        "dense_vecs": out["dense_vecs"].tolist(),
        "lexical_weights": [{k: float(v) for k, v in w.items()} for w in out["lexical_weights"]],
        "colbert_vecs": [v.tolist() for v in out["colbert_vecs"]],
        "scores_default": model.compute_score(pairs, max_query_length=length, max_passage_length=length),
        "scores_weighted": [
            model.compute_score(
                pairs, max_query_length=length, max_passage_length=length, weights_for_different_modes=w
            )
            for w in ask["weights"]
        ],
    }
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(answer, f)


if __name__ == "__main__":
    main()
