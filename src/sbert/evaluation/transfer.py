"""SentEval transfer (paper Table 5): frozen sentence vectors as features for logistic regression.

The default protocol is SentEval's own (its scikit-learn path): raw vectors; MR, CR, SUBJ and
MPQA by stratified 10-fold cross-validation with C chosen by an inner 10-fold search on each
training part; TREC and MRPC by a 10-fold search on train, then one fit and the test split;
SST-2 with C chosen on dev; C from {2^-2, ..., 2^3}; MRPC features [|u-v|, u*v]; seed 1111.
`protocol="standardized"` is the earlier variant (features standardised on the training part,
C from {2^-2, 2^0, 2^2, 2^4}, 5 inner folds), which cost MRPC and TREC points on real files.
A C on the grid's edge is reported with a warning: the best value may lie beyond it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from sbert.data.senteval import Examples, TransferTask
from sbert.evaluation.common import encode_columns

if TYPE_CHECKING:
    from sbert.evaluation.common import Embedder

log = logging.getLogger(__name__)
SENTEVAL_SEED = 1111


@dataclass(frozen=True)
class Protocol:
    """How C is searched and whether features are standardised."""

    c_grid: tuple[float, ...]
    inner_folds: int
    standardize: bool


PROTOCOLS = {
    "senteval": Protocol((0.25, 0.5, 1.0, 2.0, 4.0, 8.0), 10, False),
    "standardized": Protocol((0.25, 1.0, 4.0, 16.0), 5, True),
}


def stratified_folds(labels: Sequence[int] | np.ndarray, k: int, seed: int) -> list[np.ndarray]:
    """The k disjoint index sets covering every example, each class spread evenly, fixed by `seed`."""
    from sklearn.model_selection import StratifiedKFold

    split = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return [test for _, test in split.split(np.zeros(len(labels)), np.asarray(labels))]


def features(model: Embedder, examples: Examples, batch_size: int | None = None) -> np.ndarray:
    """One row per example: the sentence vector, or [|u-v|, u*v] for pairs."""
    texts = examples[0]
    if len(texts[0]) == 1:
        return encode_columns(model, [[t[0] for t in texts]], batch_size)[0]
    u, v = encode_columns(model, [[t[0] for t in texts], [t[1] for t in texts]], batch_size)
    return np.concatenate([np.abs(u - v), u * v], axis=1)


def fit_path(x: np.ndarray, y: np.ndarray, grid: Sequence[float], seed: int, standardize: bool) -> list[Any]:
    """One classifier per C, fitted in ascending C with warm starts (each starts from the last one's weights)."""
    from sklearn.linear_model import LogisticRegression

    scaler = None
    if standardize:
        from sklearn.preprocessing import StandardScaler

        scaler = StandardScaler().fit(x)
        x = scaler.transform(x)
    model = LogisticRegression(max_iter=2000, random_state=seed, warm_start=True)
    fitted = []
    for c in grid:
        model.set_params(C=c).fit(x, y)
        fitted.append(_Fitted(scaler, model.coef_.copy(), model.intercept_.copy(), model.classes_))
    return fitted


@dataclass(frozen=True)
class _Fitted:
    """A frozen copy of one point of the path (the warm-started model keeps moving)."""

    scaler: Any
    coef: np.ndarray
    intercept: np.ndarray
    classes: np.ndarray

    def predict(self, x: np.ndarray) -> np.ndarray:
        x = self.scaler.transform(x) if self.scaler is not None else x
        scores = x @ self.coef.T + self.intercept  # (n, 1) binary or (n, classes)
        picks = (scores[:, 0] > 0).astype(int) if scores.shape[1] == 1 else scores.argmax(axis=1)
        return self.classes[picks]


def accuracy(model: _Fitted, x: np.ndarray, y: np.ndarray) -> float:
    """Share of correct predictions."""
    return float((model.predict(x) == y).mean())


def best_c(
    x: np.ndarray, y: np.ndarray, seed: int, protocol: Protocol, dev: tuple[np.ndarray, np.ndarray] | None = None
) -> float:
    """C with the best dev accuracy, or the best mean accuracy over inner stratified folds."""
    grid = protocol.c_grid
    if dev is not None:
        scores = [accuracy(m, *dev) for m in fit_path(x, y, grid, seed, protocol.standardize)]
    else:
        per_fold = []
        for held in stratified_folds(y, protocol.inner_folds, seed):
            keep = np.setdiff1d(np.arange(len(y)), held)
            path = fit_path(x[keep], y[keep], grid, seed, protocol.standardize)
            per_fold.append([accuracy(m, x[held], y[held]) for m in path])
        scores = list(np.mean(per_fold, axis=0))
    return grid[int(np.argmax(scores))]


def _fit_one(x: np.ndarray, y: np.ndarray, c: float, seed: int, protocol: Protocol) -> _Fitted:
    return fit_path(x, y, [c], seed, protocol.standardize)[0]


def warn_on_edge(task: str, chosen: Sequence[float], protocol: Protocol) -> None:
    """Say when the search picked the grid's smallest or largest C."""
    edges = {protocol.c_grid[0], protocol.c_grid[-1]}
    on_edge = sorted({c for c in chosen if c in edges})
    if on_edge:
        log.warning("%s: C=%s is on the edge of the grid %s; the best C may lie beyond it",
                    task, "/".join(f"{c:g}" for c in on_edge), list(protocol.c_grid))  # fmt: skip


def evaluate_transfer(
    model: Embedder, task: TransferTask, seed: int = SENTEVAL_SEED, folds: int = 10, protocol: str = "senteval"
) -> dict[str, float]:
    """Test accuracy x100 (MRPC also F1 x100), with the protocol the task calls for."""
    rules = PROTOCOLS[protocol]
    if task.pool is not None:
        return _cross_validated(model, task, seed, folds, rules)
    assert task.train is not None and task.test is not None
    x, y = features(model, task.train), np.asarray(task.train[1])
    dev = (features(model, task.dev), np.asarray(task.dev[1])) if task.dev is not None else None
    c = best_c(x, y, seed, rules, dev)
    warn_on_edge(task.name, [c], rules)
    classifier = _fit_one(x, y, c, seed, rules)
    x_test, y_test = features(model, task.test), np.asarray(task.test[1])
    scores = {"accuracy": 100 * accuracy(classifier, x_test, y_test), "C": c}
    if task.pairs:
        from sklearn.metrics import f1_score

        scores["f1"] = 100 * float(f1_score(y_test, classifier.predict(x_test)))
    return scores


def _cross_validated(model: Embedder, task: TransferTask, seed: int, folds: int, rules: Protocol) -> dict[str, float]:
    """Outer k-fold accuracy with an inner C search per fold; folds run two at a time (BLAS frees the GIL)."""
    assert task.pool is not None
    x, y = features(model, task.pool), np.asarray(task.pool[1])

    def fold(held: np.ndarray) -> tuple[float, float]:
        keep = np.setdiff1d(np.arange(len(y)), held)
        c = best_c(x[keep], y[keep], seed, rules)
        return accuracy(_fit_one(x[keep], y[keep], c, seed, rules), x[held], y[held]), c

    outer = stratified_folds(y, folds, seed)
    with ThreadPoolExecutor(2) as pool, tqdm(total=len(outer), desc=f"{task.name} C search", unit="fold") as bar:
        results = []
        for result in pool.map(fold, outer):
            results.append(result)
            bar.update(1)
    accuracies = [a for a, _ in results]
    warn_on_edge(task.name, [c for _, c in results], rules)
    return {"accuracy": 100 * float(np.mean(accuracies)), "accuracy_std": 100 * float(np.std(accuracies))}
