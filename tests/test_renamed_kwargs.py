"""Keyword arguments sentence-transformers renamed: every older name its newest release still takes (read from
its own decorated functions, not from a list of ours) is taken by sbert's counterpart, with the same meaning."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings
from typing import Any

import pytest

st = pytest.importorskip("sentence_transformers")


def reference_renames() -> dict[tuple[str, str, str], dict[str, str]]:
    """(module, class, method) -> {old: new} for every method sentence-transformers wraps with deprecated_kwargs."""
    found = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(st.__path__, "sentence_transformers."):
            try:
                module = importlib.import_module(info.name)
            except Exception:  # an optional dependency's module
                continue
            for name, cls in vars(module).items():
                if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                    continue
                for method, func in vars(cls).items():
                    if getattr(func, "__wrapped__", None) is None:
                        continue
                    for cell in getattr(func, "__closure__", None) or ():
                        value = cell.cell_contents
                        if isinstance(value, dict) and value and all(isinstance(v, str) for v in value.values()):
                            found[(module.__name__, name, method)] = value
    return found


def counterpart(module: str, name: str) -> Any:
    """sbert's class at the same module path (or the nearest package above it that exports it)."""
    parts = ("sbert" + module[len("sentence_transformers") :]).split(".")
    while parts:
        try:
            return getattr(importlib.import_module(".".join(parts)), name)
        except (ImportError, AttributeError):
            parts.pop()
    return None


RENAMES = reference_renames()


def test_the_reference_list_is_found():
    assert ("sentence_transformers.sentence_transformer.modules.pooling", "Pooling", "__init__") in RENAMES
    assert len(RENAMES) >= 15


@pytest.mark.parametrize("where", sorted(RENAMES), ids=lambda w: f"{w[1]}.{w[2]}")
def test_every_older_keyword_the_reference_takes_is_taken(where):
    module, name, method = where
    if name == "BaseTrainer":  # its renames reach users through the trainers below it, checked one by one
        return
    ours = counterpart(module, name)
    assert ours is not None, f"sbert has no {name} at {module}"
    func = getattr(ours, method)
    taken = set(inspect.signature(func).parameters) | set(getattr(func, "__sbert_renames__", {}))
    missing = sorted(set(RENAMES[where]) - taken)
    assert not missing, f"{name}.{method} does not take {missing}"


def test_v2_to_v5_pooling_and_softmax_loss_calls_build_what_the_current_names_build(tiny_dirs):
    from sbert import SentenceTransformer, losses, models

    with pytest.warns(FutureWarning):
        mean = models.Pooling(32, pooling_mode_mean_tokens=True)
    with pytest.warns(FutureWarning):
        cls = models.Pooling(32, pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)
    with pytest.warns(FutureWarning):
        both = models.Pooling(32, pooling_mode_cls_token=True, pooling_mode_max_tokens=True)
    with pytest.warns(FutureWarning):
        sized = models.Pooling(word_embedding_dimension=32)
    assert mean.get_config() == models.Pooling(32, "mean").get_config() == sized.get_config()
    assert cls.get_config() == models.Pooling(32, "cls").get_config()
    assert both.get_config() == models.Pooling(32, ["cls", "max"]).get_config()
    with pytest.raises(TypeError, match="pooling_mode_mean"):
        models.Pooling(32, pooling_mode_mean=True)
    model = SentenceTransformer(str(tiny_dirs["bert"]), device="cpu")
    with pytest.warns(FutureWarning):
        loss = losses.SoftmaxLoss(model, sentence_embedding_dimension=32, num_labels=3)
    assert loss.classifier.in_features == 3 * 32 and loss.classifier.out_features == 3
