"""Router: different module chains for different tasks (queries and documents), in sentence-transformers' layout.

`router_config.json` holds `types` (module id -> class), `structure` (route -> module ids, in order)
and `parameters` (`default_route`, `allow_empty_key`, `route_mappings` with "(task, modality)"
string keys); each module lives in the folder named by its id. A module shared by two routes is
saved once. Routes resolve as sentence-transformers resolves them for text inputs (modality
"text"): a (task, modality) mapping, then the task's own route, then the default route.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self, cast

from torch import nn

from sbert.errors import ModelFormatError
from sbert.formats.layout import ROUTER_CONFIG_FILE, read_router_config, write_router_config
from sbert.modules.base import Features, Module
from sbert.modules.chain import chain_widths

CONFIG_FILE = ROUTER_CONFIG_FILE
TEXT = "text"  # the one modality sbert encodes
RouteKey = tuple[str | None, str | None]
Loader = Callable[[str, Path], Module]


class RouteError(ValueError):
    """A task that names no route of the model (one line: the task and the routes there are)."""


class Router(Module):
    """Runs one of several module lists on the features, picked by the task (query, document, ...)."""

    module_type = "sentence_transformers.base.modules.router.Router"
    config_file = CONFIG_FILE

    def __init__(
        self,
        routes: dict[str, list[Module]],
        default_route: str | None = None,
        allow_empty_key: bool = True,
        route_mappings: dict[RouteKey, str] | None = None,
    ) -> None:
        super().__init__()
        if not routes or any(not modules for modules in routes.values()):
            raise ModelFormatError("a Router needs at least one route, each with at least one module")
        for target in [default_route, *(route_mappings or {}).values()]:
            if target is not None and target not in routes:
                raise ModelFormatError(f"Router route {target!r} is not one of {sorted(routes)}")
        self.routes = nn.ModuleDict({name: nn.ModuleList(modules) for name, modules in routes.items()})
        # sentence-transformers' rule: without a default, allow_empty_key makes the first route it.
        self.default_route = default_route if default_route or not allow_empty_key else next(iter(routes))
        self.allow_empty_key = allow_empty_key
        self.route_mappings = dict(route_mappings or {})

    @classmethod
    def for_query_document(cls, query: list[Module], document: list[Module], default_route: str = "document") -> Self:
        """The asymmetric retrieval layout: a "query" route and a "document" route (the default)."""
        return cls({"query": query, "document": document}, default_route=default_route)

    def route_name(self, task: str | None) -> str:
        """The route `task` takes (None: the default route); RouteError when there is none."""
        for key in ((task, TEXT), (task, None), (None, TEXT), (None, None)):
            if key in self.route_mappings:
                return self.route_mappings[key]
        if task and task in self.routes:
            return task
        if TEXT in self.routes:
            return TEXT
        if task is None and self.default_route is not None:
            return self.default_route
        raise RouteError(
            f"this model's Router has no route for task={task!r}; its routes: {', '.join(sorted(self.routes))}"
            + (f" (mappings: {self._mapping_names()})" if self.route_mappings else "")
        )

    def route(self, task: str | None) -> list[Module]:
        """The modules `task` runs, in order."""
        return self.modules_of(self.route_name(task))

    def modules_of(self, name: str) -> list[Module]:
        """The modules of the route called `name`, in order."""
        return [cast(Module, m) for m in cast(nn.ModuleList, self.routes[name])]

    def route_lists(self) -> dict[str, list[Module]]:
        """Every route's modules, by route name."""
        return {name: self.modules_of(name) for name in self.routes}

    @property
    def output_dimension(self) -> int:
        """Width after the default route (every route is expected to give the same)."""
        return chain_widths(self.route(None))[-1]

    def forward(self, features: Features) -> Features:
        """Run the route of `features["task"]` (the default route when absent)."""
        for module in self.route(features.get("task")):
            features = module(features)
        return features

    def get_config(self) -> dict[str, Any]:
        """The parameters sentence-transformers stores (mapping keys as the strings it writes)."""
        mappings = {str(key): route for key, route in self.route_mappings.items()}
        return {
            "default_route": self.default_route, "allow_empty_key": self.allow_empty_key, "route_mappings": mappings,
        }  # fmt: skip

    def save(self, path: Path) -> None:
        """Each distinct module in `{route}_{index}_{Class}`, then router_config.json."""
        ids: dict[int, str] = {}
        types: dict[str, str] = {}
        structure: dict[str, list[str]] = {}
        for name, modules in self.route_lists().items():
            structure[name] = []
            for index, module in enumerate(modules):
                if id(module) not in ids:
                    ids[id(module)] = f"{name}_{index}_{type(module).__name__}"
                    types[ids[id(module)]] = module.module_type
                    module.save(path / ids[id(module)])
                structure[name].append(ids[id(module)])
        path.mkdir(parents=True, exist_ok=True)
        write_router_config(path, types, structure, self.get_config())

    @classmethod
    def load(cls, path: Path) -> Self:
        """Not on its own: its modules load by the model's rules (remote code, dtype); see load_routes."""
        raise TypeError("a Router loads through sbert.dense.loading.load_modules (Router.load_routes with its loader)")

    @classmethod
    def load_routes(cls, path: Path, load_one: Loader) -> Self:
        """Rebuild from router_config.json, each module read by `load_one(type, folder)`."""
        config = read_router_config(path)
        config_path, structure, parameters = config.path, config.structure, config.parameters
        loaded = {module_id: load_one(type_name, path / module_id) for module_id, type_name in config.types.items()}
        try:
            routes = {name: [loaded[m] for m in ids] for name, ids in structure.items()}
        except KeyError as e:
            raise ModelFormatError(f"{config_path}: 'structure' names module {e.args[0]!r}, 'types' lacks it") from None
        saved = parameters.get("route_mappings") or {}
        mappings = {_route_key(key, config_path): route for key, route in saved.items()}
        return cls(routes, parameters.get("default_route"), bool(parameters.get("allow_empty_key", True)), mappings)

    def _mapping_names(self) -> str:
        return ", ".join(f"{key} -> {route}" for key, route in self.route_mappings.items())


def _route_key(text: str, config_path: Path) -> RouteKey:
    """The (task, modality) pair of a key as sentence-transformers writes it, e.g. "('query', 'text')"."""
    try:
        key = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        key = None
    if not (isinstance(key, tuple) and len(key) == 2):
        raise ModelFormatError(f"{config_path}: route mapping key {text!r} is not a (task, modality) pair")
    task, modality = key
    if isinstance(modality, tuple):
        modality = TEXT if modality == (TEXT,) else repr(modality)  # multimodal keys never match a text input
    return task, modality
