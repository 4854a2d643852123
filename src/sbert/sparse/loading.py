"""Reading and writing sentence-transformers' SparseEncoder folders: SPLADE, and inference-free SPLADE (a Router)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from sbert.errors import ModelFormatError
from sbert.formats import layout
from sbert.modules.chain import save_chain
from sbert.sparse.csr import SparseAutoEncoder
from sbert.sparse.mlm import MLMTransformer, check_mlm_head, is_fill_mask
from sbert.sparse.splade import SpladePooling
from sbert.sparse.static_query import SparseStaticEmbedding

ROUTER_TYPE = "sentence_transformers.base.modules.router.Router"
Modules = tuple[MLMTransformer, SpladePooling, SparseStaticEmbedding | None]


def load_sparse(root: Path, trust_remote_code: bool) -> dict[str, Any]:
    """SparseEncoder's constructor arguments for the folder, or a one-line error naming what it is instead.

    SPLADE: `mlm` and `pooling` (and `query` for inference-free SPLADE); CSR: the `dense` model and its `sae`.
    """
    if not (root / layout.MODULES_FILE).is_file():
        check_mlm_head(root)  # a plain MLM checkpoint: SPLADE max pooling on it, as sentence-transformers does
        return {"mlm": MLMTransformer.from_pretrained(root, trust_remote_code=trust_remote_code),
                "pooling": SpladePooling()}  # fmt: skip
    entries = layout.read_modules(root)
    names = [e.class_name for e in entries]
    if names and names[-1] == "SparseAutoEncoder":
        from sbert.dense.loading import load_entries
        from sbert.dense.model import SentenceEncoder

        dense = SentenceEncoder(load_entries(root, entries[:-1], trust_remote_code))
        return {"dense": dense, "sae": SparseAutoEncoder.load(root / entries[-1].path)}
    if names in (["Router"], ["Asym"]):
        return dict(zip(("mlm", "pooling", "query"), _load_router(root / entries[0].path, trust_remote_code),
                        strict=True))  # fmt: skip
    if "SpladePooling" not in names:
        raise ModelFormatError(f"{root}: a dense model ({', '.join(names)}): load it with sbert.SentenceEncoder")
    mlm, pooling = _splade([(root / e.path, e.type) for e in entries], root, trust_remote_code)
    return {"mlm": mlm, "pooling": pooling}


def parts_from_modules(modules: Sequence[Any]) -> dict[str, Any]:
    """SparseEncoder's constructor arguments for a list of built modules (6.2's `SparseEncoder(modules=[...])`).

    SPLADE: an MLM module then SpladePooling; inference-free SPLADE: one Router whose query route is a
    SparseStaticEmbedding and whose document route is SPLADE; CSR: a dense chain then a SparseAutoEncoder.
    """
    from sbert.modules.router import Router

    chain = list(modules)
    if chain and isinstance(chain[-1], SparseAutoEncoder):
        from sbert.dense.model import SentenceEncoder

        return {"dense": SentenceEncoder(chain[:-1]), "sae": chain[-1]}
    if len(chain) == 1 and isinstance(chain[0], Router):
        routes = {name: list(cast(Sequence[Any], route)) for name, route in chain[0].routes.items()}
        query = routes.get("query", [])
        if len(query) != 1 or not isinstance(query[0], SparseStaticEmbedding) or set(routes) != {"query", "document"}:
            raise ModelFormatError("SparseEncoder(modules=[Router]): sbert takes a query route of one "
                                   "SparseStaticEmbedding and a document route of SPLADE")  # fmt: skip
        return {**_splade_modules(routes["document"]), "query": query[0]}
    return _splade_modules(chain)


def _splade_modules(chain: list[Any]) -> dict[str, Any]:
    names = ", ".join(type(m).__name__ for m in chain)
    if len(chain) != 2 or not isinstance(chain[1], SpladePooling):
        raise ModelFormatError(f"SparseEncoder(modules=[{names}]): expected an MLM Transformer then SpladePooling, "
                               "a Router of them, or a dense chain then a SparseAutoEncoder")  # fmt: skip
    if not isinstance(chain[0], MLMTransformer):
        raise ModelFormatError(f"SparseEncoder(modules=[{names}]): SpladePooling pools MLM logits; build the "
                               'first module with Transformer(path, transformer_task="fill-mask")')  # fmt: skip
    return {"mlm": chain[0], "pooling": chain[1]}


def _splade(route: list[tuple[Path, str]], root: Path, trust_remote_code: bool) -> tuple[MLMTransformer, SpladePooling]:
    names = [t.rsplit(".", 1)[-1] for _, t in route]
    first = route[0] if route else None
    if len(route) != 2 or first is None or not is_fill_mask(first[0], first[1]) or names[1] != "SpladePooling":
        raise ModelFormatError(f"{root}: expected a fill-mask Transformer then SpladePooling, got {', '.join(names)}")
    return MLMTransformer.load(first[0], trust_remote_code=trust_remote_code), SpladePooling.load(route[1][0])


def _load_router(folder: Path, trust_remote_code: bool) -> Modules:
    """Inference-free SPLADE: a `query` route of one SparseStaticEmbedding, a `document` route of SPLADE."""
    config = layout.read_router_config(folder)
    query, document = config.structure.get("query", []), config.structure.get("document", [])
    if config.type_names("query") != ["SparseStaticEmbedding"] or not document:
        raise ModelFormatError(f"{config.path}: sbert loads a Router of a SparseStaticEmbedding query route "
                               f"and a SPLADE document route; got {config.structure}")  # fmt: skip
    mlm, pooling = _splade([(folder / m, config.types.get(m, "")) for m in document], folder, trust_remote_code)
    return mlm, pooling, SparseStaticEmbedding.load(folder / query[0])


def save_csr(tmp: Path, chain: list[Any], sae: SparseAutoEncoder, model_config: dict[str, Any]) -> None:
    """Write a CSR model as sentence-transformers lays it out: the dense model's modules, then the autoencoder."""
    save_chain(tmp, [*chain, sae])
    layout.write_json(tmp / layout.MODEL_CONFIG_FILE, {**model_config, "model_type": "SparseEncoder"})


def save_sparse(tmp: Path, modules: Modules, model_config: dict[str, Any]) -> None:
    """Write the folder `load_sparse` reads (a Router layout when there is a separate query side)."""
    mlm, pooling, query = modules
    if query is None:
        save_chain(tmp, [mlm, pooling])
    else:
        named: dict[str, Any] = {"query_0_SparseStaticEmbedding": query, "document_0_Transformer": mlm,
                                 "document_1_SpladePooling": pooling}  # fmt: skip
        kinds = {name: module.module_type for name, module in named.items()}
        for name, module in named.items():
            module.save(tmp / name)
        structure = {"query": ["query_0_SparseStaticEmbedding"],
                     "document": ["document_0_Transformer", "document_1_SpladePooling"]}  # fmt: skip
        parameters = {"default_route": "document", "allow_empty_key": True, "route_mappings": {}}
        layout.write_router_config(tmp, kinds, structure, parameters)
        layout.write_modules(tmp, [layout.ModuleEntry(0, "0", "", ROUTER_TYPE)])
    layout.write_json(tmp / layout.MODEL_CONFIG_FILE, {**model_config, "model_type": "SparseEncoder"})
