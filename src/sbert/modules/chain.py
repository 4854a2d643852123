"""Facts about a module chain: the width after each module; new Dense heads that fit it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sbert.errors import ModelFormatError
from sbert.formats.layout import ModuleEntry, write_modules
from sbert.modules.base import Module
from sbert.modules.dense import Dense, parse_dense


def chain_widths(modules: list[Module] | tuple[Module, ...]) -> list[int]:
    """The width of the vector after each module: the one it gives, else the one before it (Normalize).

    A module that takes a fixed width (Dense, LayerNorm: `input_dimension`) must get it; a one-line
    ModelFormatError names both modules and both sizes otherwise.
    """
    widths: list[int] = []
    for index, module in enumerate(modules):
        wanted = getattr(module, "input_dimension", None)
        if wanted is not None and widths and wanted != widths[-1]:
            before = f"module {index - 1} ({type(modules[index - 1]).__name__})"
            raise ModelFormatError(
                f"module {index} ({type(module).__name__}) takes {wanted}-wide vectors, but {before} gives {widths[-1]}"
            )
        # A Transformer gives token vectors of its embedding_dimension; every other width changer says output_dimension.
        given = getattr(module, "output_dimension", None) or getattr(module, "embedding_dimension", None)
        widths.append(int(given) if given else widths[-1])
    return widths


def dense_heads(modules: list[Module], specs: Sequence[str]) -> list[Module]:
    """Dense modules for `OUT[:ACTIVATION]` specs, each taking the width the one before it gives."""
    heads: list[Module] = []
    size = chain_widths(modules)[-1]
    for spec in specs:
        out, activation = parse_dense(spec)
        heads.append(Dense(size, out, activation_function=activation))
        size = out
    return heads


def save_chain(folder: Path, modules: Sequence[Module]) -> None:
    """Each module in its subfolder (the first in `folder` itself, as sentence-transformers expects), modules.json."""
    entries = []
    for idx, module in enumerate(modules):
        path = "" if idx == 0 else f"{idx}_{type(module).__name__}"
        module.save(folder / path)
        entries.append(ModuleEntry(idx, str(idx), path, module.module_type))
    write_modules(folder, entries)
