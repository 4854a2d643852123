"""SentEval-style transfer (paper Table 5): frozen sentence vectors as features for logistic regression.

MR, CR, SUBJ, MPQA: stratified, seeded 10-fold cross-validation. SST-2: the given splits, C chosen
on dev. TREC and MRPC: train/test splits, C chosen by inner cross-validation on train. MRPC
features are [|u-v|, u*v]. In every fit C comes from {2^-2, 2^0, 2^2, 2^4} (SentEval's search),
and features are standardised on the training part (a deviation from SentEval: without it,
unit-length vectors leave LR under-regularised at every C of the grid).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from sbert.data.senteval import Examples, TransferTask
from sbert.evaluation.common import encode_columns

if TYPE_CHECKING:
    from sbert.evaluation.common import Embedder

C_GRID = (0.25, 1.0, 4.0, 16.0)
INNER_FOLDS = 5


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


def _fit(x: np.ndarray, y: np.ndarray, c: float, seed: int) -> object:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000, random_state=seed))
    return model.fit(x, y)


def _accuracy(model: object, x: np.ndarray, y: np.ndarray) -> float:
    return float((model.predict(x) == y).mean())  # type: ignore[attr-defined]


def best_c(x: np.ndarray, y: np.ndarray, seed: int, dev: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """C with the best dev accuracy, or the best mean accuracy over inner stratified folds."""
    scores = []
    for c in C_GRID:
        if dev is not None:
            scores.append(_accuracy(_fit(x, y, c, seed), *dev))
            continue
        folds = stratified_folds(y, INNER_FOLDS, seed)
        fold_scores = []
        for held in folds:
            keep = np.setdiff1d(np.arange(len(y)), held)
            fold_scores.append(_accuracy(_fit(x[keep], y[keep], c, seed), x[held], y[held]))
        scores.append(float(np.mean(fold_scores)))
    return C_GRID[int(np.argmax(scores))]


def evaluate_transfer(model: Embedder, task: TransferTask, seed: int = 0, folds: int = 10) -> dict[str, float]:
    """Test accuracy x100 (MRPC also F1 x100), with the protocol the task calls for."""
    if task.pool is not None:
        x, y = features(model, task.pool), np.asarray(task.pool[1])
        accuracies = []
        for held in stratified_folds(y, folds, seed):
            keep = np.setdiff1d(np.arange(len(y)), held)
            c = best_c(x[keep], y[keep], seed)
            accuracies.append(_accuracy(_fit(x[keep], y[keep], c, seed), x[held], y[held]))
        return {"accuracy": 100 * float(np.mean(accuracies)), "accuracy_std": 100 * float(np.std(accuracies))}
    assert task.train is not None and task.test is not None
    x, y = features(model, task.train), np.asarray(task.train[1])
    dev = (features(model, task.dev), np.asarray(task.dev[1])) if task.dev is not None else None
    c = best_c(x, y, seed, dev)
    classifier = _fit(x, y, c, seed)
    x_test, y_test = features(model, task.test), np.asarray(task.test[1])
    scores = {"accuracy": 100 * _accuracy(classifier, x_test, y_test), "C": c}
    if task.pairs:
        from sklearn.metrics import f1_score

        scores["f1"] = 100 * float(f1_score(y_test, classifier.predict(x_test)))  # type: ignore[attr-defined]
    return scores
