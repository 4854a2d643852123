"""sentence-transformers' legacy import paths, answered under `sbert.` as the reference answers them.

sentence-transformers 6 keeps its older layouts importable so that old scripts run: a module per class
(`sentence_transformers.losses.MultipleNegativesRankingLoss`, `...models.Pooling`, 2.x), and modules that
moved (`sentence_transformers.model_card`, `...sampler`, 5.4 and 6.0). sbert answers the same paths:
- `P.Name`, where the module or package `P` has a public class or function `Name`: the module that defines
  sbert's `Name` (or, where that module does not hold it under the name, a module holding just it);
- the moved modules in MOVED: the sbert module holding the same public names.
The finder runs after every regular one (`install`, called by `import sbert`), so it only answers imports
that would otherwise fail. A plain module that is such a `P` declares `__path__ = []`, because the import
system looks for `P.Name` only under a package.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Sequence

# Moved modules: the reference's old path (under sbert.) -> the sbert module holding its public names.
MOVED = {
    "sbert.model_card": "sbert.compat.model_card",
    "sbert.sampler": "sbert.compat.training_args",  # BatchSamplers, MultiDatasetBatchSamplers
    "sbert.sentence_transformer.modules.normalize": "sbert.modules.normalize",
    # The word tokenizer's package, under both of the reference's paths (2.x kept a module per class in it).
    "sbert.models.tokenizer": "sbert.modules.word_tokenizer",
    "sbert.sentence_transformer.modules.tokenizer": "sbert.modules.word_tokenizer",
}


class _KeepsNames(types.ModuleType):
    """A module whose classes and functions are not replaced by a legacy path's module of the same name.

    Importing `P.Name` ends with the import system binding the module it found as `P.Name`: that would put
    a module where sbert's class was.
    """

    def __setattr__(self, name: str, value: object) -> None:
        held = self.__dict__.get(name)
        if isinstance(value, types.ModuleType) and held is not None and not isinstance(held, types.ModuleType):
            return
        super().__setattr__(name, value)


class _Alias(importlib.abc.Loader):
    """A loader that hands over a module already made (it runs nothing)."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        """The module the legacy path names."""
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module is loaded already."""


class LegacyPaths(importlib.abc.MetaPathFinder):
    """Finds the reference's legacy paths under `sbert.` (module docstring)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for `fullname` when it is a legacy path sbert answers, else None."""
        module = resolve(fullname)
        if module is None:
            return None
        parent = sys.modules.get(fullname.rpartition(".")[0])
        if parent is not None and type(parent) is types.ModuleType:
            parent.__class__ = _KeepsNames
        return importlib.util.spec_from_loader(fullname, _Alias(module))


def resolve(fullname: str) -> types.ModuleType | None:
    """The module a legacy path `fullname` stands for, or None when it is not one."""
    if not fullname.startswith("sbert."):
        return None
    if fullname in MOVED:
        return importlib.import_module(MOVED[fullname])
    parent_name, _, name = fullname.rpartition(".")
    parent = sys.modules.get(parent_name)
    if parent is None or not name[:1].isupper():
        return None
    found = getattr(parent, name, None)  # a lazy name of the package is loaded here
    if found is None or isinstance(found, types.ModuleType):
        return None
    vars(parent).setdefault(name, found)  # held by the parent itself, so _KeepsNames protects it
    home = sys.modules.get(getattr(found, "__module__", "") or "")
    if home is not None and getattr(home, name, None) is found:
        return home
    single = types.ModuleType(fullname, f"sbert's {name} under the reference's legacy path")
    setattr(single, name, found)
    return single


def install() -> None:
    """Put the finder last on sys.meta_path (once)."""
    if not any(isinstance(finder, LegacyPaths) for finder in sys.meta_path):
        sys.meta_path.append(LegacyPaths())
