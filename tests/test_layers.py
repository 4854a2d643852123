"""The layers point one way (cli/serve -> search/evaluation/training/scale -> model kinds -> encoding ->
backends -> modules -> adapters -> formats -> vectors): no import cycle between sbert's modules, no import
upward, no two packages importing each other; function-level and TYPE_CHECKING imports included, no exemptions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "sbert"
ABOVE_RUNTIME = ("sbert.search", "sbert.serve", "sbert.cli", "sbert.demo", "sbert.training", "sbert.evaluation",
                 "sbert.scale")  # fmt: skip
KINDS_PKGS = ("sbert.dense", "sbert.reranker", "sbert.sparse", "sbert.static", "sbert.multivector",
              "sbert.model_kind")  # fmt: skip
# Lower layers never import these (module-name prefixes).
UPWARD = {
    "sbert.vectors": ("sbert",),  # the leaf: nothing of sbert's own
    "sbert.formats": (
        "sbert.adapters",
        "sbert.modules",
        "sbert.backends",
        "sbert.encoding",
        *KINDS_PKGS,
        *ABOVE_RUNTIME,
    ),
    "sbert.adapters": ("sbert.modules", "sbert.backends", "sbert.encoding", *KINDS_PKGS, *ABOVE_RUNTIME),
    "sbert.modules": ("sbert.backends", "sbert.encoding", *KINDS_PKGS, *ABOVE_RUNTIME),
    "sbert.backends": ("sbert.encoding", *KINDS_PKGS, *ABOVE_RUNTIME),
    "sbert.encoding": (*KINDS_PKGS, *ABOVE_RUNTIME),
    "sbert.dense": ABOVE_RUNTIME,
    "sbert.reranker": ABOVE_RUNTIME,
    "sbert.sparse": ABOVE_RUNTIME,
    "sbert.static": ABOVE_RUNTIME,
    "sbert.multivector": ABOVE_RUNTIME,
    "sbert.search": ("sbert.serve", "sbert.cli", "sbert.demo"),
    "sbert.scale": ("sbert.serve", "sbert.cli", "sbert.training"),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, known: set[str]) -> set[str]:
    """The sbert modules `path` imports anywhere: functions and TYPE_CHECKING blocks included (a type-only
    import still ties the two layers together)."""
    found: set[str] = set()

    def resolve(name: str) -> str:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(resolve(a.name) for a in node.names if a.name.startswith("sbert"))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sbert") and not node.level:
            found.update(resolve(f"{node.module}.{a.name}") for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    found.discard(module_name(path))
    found.discard("")
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in SRC.rglob("*.py")}
    return {name: imports(path, set(paths)) for name, path in paths.items()}


def test_no_import_cycles(graph):
    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and (seen.add(nxt) or reaches(nxt, goal, seen))):
                return True
        return False

    cycles = sorted(f"{a} <-> {b}" for a, deps in graph.items() for b in deps if a < b and reaches(b, a, set()))
    assert not cycles, cycles


def test_no_layer_imports_upward(graph):
    bad = sorted(
        f"{name} imports {dep}"
        for name, deps in graph.items()
        for layer, banned in UPWARD.items()
        if name == layer or name.startswith(layer + ".")
        for dep in deps
        # a module may use its own layer's modules (vectors/maxsim.py reads vectors/token_codes.py)
        if any(dep == b or dep.startswith(b + ".") for b in banned) and not dep.startswith(layer + ".")
    )
    assert not bad, bad


def package(name: str) -> str:
    """sbert.encoding.engine -> sbert.encoding; a top-level module is its own package."""
    return ".".join(name.split(".")[:2])


def test_no_two_packages_import_each_other(graph):
    # Each package sits at one layer: a pair that imports both ways (encoding <-> modules, say) means a
    # package holds helpers below another and orchestrators above it, and must be split.
    pairs = {(package(a), package(b)) for a, deps in graph.items() for b in deps if package(a) != package(b)}
    both = sorted(f"{a} <-> {b}" for a, b in pairs if a < b and (b, a) in pairs)
    assert not both, both


# Each file of the sentence-transformers layout is parsed in exactly one function; everything else asks it.
LAYOUT_READERS = {
    "MODULES_FILE": {"sbert.formats.layout.read_modules"},
    "ROUTER_CONFIG_FILE": {"sbert.formats.layout.read_router_config"},
    "MODEL_CONFIG_FILE": {"sbert.formats.model_config.read_model_config"},
}
LAYOUT_NAMES = {"modules.json": "MODULES_FILE", "router_config.json": "ROUTER_CONFIG_FILE",
                "config_sentence_transformers.json": "MODEL_CONFIG_FILE"}  # fmt: skip


def json_reads() -> dict[str, set[str]]:
    """For each layout file, the functions that hand a path naming it to a JSON reader (read_json, json.load(s))."""
    found: dict[str, set[str]] = {name: set() for name in LAYOUT_READERS}
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            # A path assigned from a layout name and read later counts too: the function body is searched whole.
            named = {LAYOUT_NAMES.get(n.value, "") for n in ast.walk(function) if isinstance(n, ast.Constant)}
            named |= {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
            named |= {n.attr for n in ast.walk(function) if isinstance(n, ast.Attribute)}
            calls = [ast.unparse(n.func) for n in ast.walk(function) if isinstance(n, ast.Call)]
            reads = any(c.endswith(("read_json", "json.load", "json.loads")) for c in calls)
            for constant in LAYOUT_READERS:
                if reads and constant in named:
                    found[constant].add(f"{module_name(path)}.{function.name}")
    return found


def test_each_layout_file_is_parsed_in_one_function():
    assert json_reads() == LAYOUT_READERS


# The model kinds; callers use the encoder contract, never the class.
KINDS = {"SentenceEncoder", "SparseEncoder", "StaticEncoder", "CrossEncoder", "MultiVectorEncoder", "GloveEncoder"}


def class_branches() -> set[str]:
    """`module: Class` for every isinstance / issubclass / `type(x) is` test naming a model kind."""
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named: set[str] = set()
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("isinstance", "issubclass") and node.args:
                named = {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node.args[-1])
                         if isinstance(n, ast.Name | ast.Attribute)}  # fmt: skip
            if isinstance(node, ast.Compare) and "type(" in ast.unparse(node.left):
                named = {n.id for c in node.comparators for n in ast.walk(c) if isinstance(n, ast.Name)}
            found |= {f"{module_name(path)}: {name}" for name in named & KINDS}
    return found


def test_no_branching_on_the_model_class():
    # The kinds differ only behind the contract (run_plan, fast_tokenizer, pooling_modes, pair_scorer,
    # token_lengths, ...): a branch on the class outside the loader is a policy decided twice.
    assert class_branches() == set(), sorted(class_branches())
