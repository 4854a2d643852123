"""6.2's `MultiVectorDistillationEvaluator`: how closely a ColBERT student's MaxSim scores follow a teacher's.

Per query, the student's scores of its candidate documents against the teacher's: the KL divergence of
the two softmax distributions (times the student temperature squared, as the distillation loss) and the
Spearman correlation of the rankings, averaged over queries. With one document per query, both are
taken over the whole set instead (a single distribution), as 6.2 does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from scipy.stats import spearmanr

from sbert.evaluation.evaluators.base import SentenceEvaluator, embed, pair_scores
from sbert.multivector.tokens import refuse_token_pooling
from sbert.native import native
from sbert.similarity import check_maxsim_scorer


class MultiVectorDistillationEvaluator(SentenceEvaluator):
    """`{name}_kl_divergence` and `{name}_spearman` (primary) of the student's scores against the teacher's."""

    def __init__(self, queries: Sequence[str], documents: Sequence[Any], scores: Any, *, temperature: float = 1.0,
                 student_temperature: float | None = None, teacher_temperature: float | None = None,
                 similarity_fct: Callable[..., Any] | None = None, name: str = "", batch_size: int = 16,
                 show_progress_bar: bool = False, write_csv: bool = True, truncate_dim: int | None = None,
                 token_pooling: Any = None) -> None:  # fmt: skip
        super().__init__()
        check_maxsim_scorer(similarity_fct, type(self).__name__)
        refuse_token_pooling(token_pooling, type(self).__name__)
        self.truncate_dim = truncate_dim  # each token vector cut to it, then unit length again (as 6.3)
        if not len(queries) == len(documents) == len(scores):
            raise ValueError(f"queries ({len(queries)}), documents ({len(documents)}), and scores ({len(scores)}) "
                             "must all have the same length.")  # fmt: skip
        self.queries = list(queries)
        self.nested = bool(documents) and isinstance(documents[0], list | tuple)
        self.documents: list[Any] = [list(row) for row in documents] if self.nested else list(documents)
        self.scores = torch.as_tensor(scores, dtype=torch.float32).detach().cpu()
        if self.scores.ndim != (2 if self.nested else 1):
            raise ValueError(f"scores of shape {tuple(self.scores.shape)}: 2-D (queries, candidates) with "
                             "per-query candidate lists, 1-D with one document per query")  # fmt: skip
        self.student_t = student_temperature if student_temperature is not None else temperature
        self.teacher_t = teacher_temperature if teacher_temperature is not None else temperature
        self.name, self.batch_size, self.write_csv = name, batch_size, write_csv
        self.show_progress_bar = show_progress_bar
        self.csv_file = f"distillation_evaluation{'_' + name if name else ''}_results.csv"
        self.csv_headers = ["epoch", "steps", "kl_divergence", "spearman"]
        self.primary_metric = "spearman"

    def student_scores(self, model: Any) -> torch.Tensor:
        """(queries, candidates) MaxSim scores, or (queries,) with one document each."""
        function = native(model).similarity_fn_name
        cut = self.truncate_dim
        q = embed(model, self.queries, self.batch_size, cut, "query", show_progress=self.show_progress_bar)
        if not self.nested:
            return torch.from_numpy(pair_scores(q, embed(model, self.documents, self.batch_size, cut, "document"),
                                                function))  # fmt: skip
        ways = len(self.documents[0])
        flat = embed(model, [str(d) for row in self.documents for d in row], self.batch_size, cut, "document")
        return torch.from_numpy(np.stack([pair_scores(q, flat[w::ways], function) for w in range(ways)], axis=1))

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1,
                 steps: int = -1) -> dict[str, float]:  # fmt: skip
        """KL divergence and Spearman correlation of the student's scores to the teacher's."""
        student = self.student_scores(model)
        teacher_log = torch.log_softmax(self.scores / self.teacher_t, dim=-1)
        student_log = torch.log_softmax(student / self.student_t, dim=-1)
        reduction = "batchmean" if self.nested else "sum"  # one global distribution without candidate lists
        kl = torch.nn.functional.kl_div(student_log, teacher_log, reduction=reduction, log_target=True).item()
        kl *= self.student_t**2
        if self.nested:  # per query, leaving out queries whose scores are all equal (no ranking)
            found = [spearmanr(t, s)[0] for t, s in zip(self.scores.numpy(), student.numpy(), strict=True)]
            kept = [float(c) for c in found if c == c]
            spearman = sum(kept) / len(kept) if kept else 0.0
        else:
            overall = float(spearmanr(self.scores.numpy(), student.numpy())[0])
            spearman = overall if overall == overall else 0.0
        self.write_csv_row(output_path, self.write_csv, [epoch, steps, kl, spearman])
        metrics = self.prefix_name_to_metrics({"kl_divergence": kl, "spearman": float(spearman)}, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics
