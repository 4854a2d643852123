"""`EmbeddingSimilarityEvaluator`: Pearson and Spearman of pair similarities against gold scores (STS)."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import pearsonr, spearmanr

from sbert.evaluation.evaluators.base import SentenceEvaluator, SimilarityFunction, embed, pair_scores, similarity_name
from sbert.search.quantize import quantize_embeddings

SIMILARITIES = ("cosine", "manhattan", "euclidean", "dot")


def unpacked_floats(codes: np.ndarray, precision: str) -> np.ndarray:
    """Quantized codes as float rows the similarity functions can take: bits unpacked, integers widened."""
    if precision == "binary":  # signed packed bytes: back to 0-255 before unpacking
        codes = codes.astype(np.int16) + 128
    if precision in ("binary", "ubinary"):
        codes = np.unpackbits(codes.astype(np.uint8), axis=1)
    return codes.astype(np.float32)


class EmbeddingSimilarityEvaluator(SentenceEvaluator):
    """`{name}_pearson_{fn}` and `{name}_spearman_{fn}` for each similarity; primary: Spearman of the main one."""

    def __init__(
        self,
        sentences1: list[str],
        sentences2: list[str],
        scores: list[float],
        batch_size: int = 16,
        main_similarity: str | SimilarityFunction | None = None,
        similarity_fn_names: list[str] | None = None,
        name: str = "",
        show_progress_bar: bool = False,
        write_csv: bool = True,
        precision: str | None = None,
        truncate_dim: int | None = None,
    ) -> None:
        super().__init__()
        if not len(sentences1) == len(sentences2) == len(scores):
            raise ValueError(f"{len(sentences1)} sentences1, {len(sentences2)} sentences2 and {len(scores)} scores "
                             "must be as many")  # fmt: skip
        self.sentences1, self.sentences2, self.scores = list(sentences1), list(sentences2), list(scores)
        self.batch_size, self.name, self.show_progress_bar = batch_size, name, show_progress_bar
        self.write_csv, self.precision, self.truncate_dim = write_csv, precision, truncate_dim
        self.main_similarity = similarity_name(main_similarity)
        self.similarity_fn_names = list(similarity_fn_names or ([self.main_similarity] if self.main_similarity else []))
        self.csv_file = (
            f"similarity_evaluation{'_' + name if name else ''}{'_' + precision if precision else ''}_results.csv"
        )

    def _vectors(self, model: Any) -> tuple[np.ndarray, np.ndarray]:
        """Both columns' vectors, quantized to `precision` (calibrated on both together) and back to floats."""
        n = len(self.sentences1)
        both = embed(model, [*self.sentences1, *self.sentences2], self.batch_size, self.truncate_dim,
                     show_progress=self.show_progress_bar)  # fmt: skip
        if self.precision not in (None, "float32"):
            both = unpacked_floats(quantize_embeddings(both, str(self.precision)), str(self.precision))
        return both[:n], both[n:]

    def __call__(
        self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1
    ) -> dict[str, float]:
        """Pearson and Spearman (0-1) for each similarity function (the model's own by default)."""
        u, v = self._vectors(model)
        names = self.similarity_fn_names or [model.similarity_fn_name]
        gold = np.asarray(self.scores, dtype=np.float64)
        metrics: dict[str, float] = {}
        for fn in names:
            predicted = pair_scores(u, v, fn)
            metrics[f"pearson_{fn}"] = float(pearsonr(gold, predicted).statistic)
            metrics[f"spearman_{fn}"] = float(spearmanr(gold, predicted).statistic)
        self.csv_headers = ["epoch", "steps"] + [f"{fn}_{m}" for fn in names for m in ("pearson", "spearman")]
        self.write_csv_row(
            output_path,
            self.write_csv,
            [epoch, steps] + [metrics[f"{m}_{fn}"] for fn in names for m in ("pearson", "spearman")],
        )
        if len(names) > 1:
            metrics["pearson_max"] = max(metrics[f"pearson_{fn}"] for fn in names)
            metrics["spearman_max"] = max(metrics[f"spearman_{fn}"] for fn in names)
        main = self.main_similarity or (names[0] if len(names) == 1 else "max")
        self.primary_metric = f"spearman_{main}"
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics
