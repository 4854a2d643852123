"""`sbert.train(...)`: the notebook's way in, the same code path as `sbert train` and TOML recipes.

    sbert.train("all-MiniLM-L6-v2", "out/faq",
                datasets={"faq": df, "nli": "nli:data/snli"},
                objectives={"faq": "mnrl", "nli": ("classification", {"concat": "u,v,|u-v|"})},
                dev="stsb:data/sts-dev.csv", epochs=1, sampling="proportional")

Datasets are data specs (read as the CLI reads them) or tables in memory (pandas, `datasets`,
pyarrow, a dict of lists, or an sbert Dataset); every setting is a Stage or TrainConfig field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from sbert.data import Dataset, from_table, with_option
from sbert.errors import SbertError
from sbert.training.config import Objective, Stage, TrainConfig
from sbert.training.trainer import Trainer, TrainResult

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder

_STAGE = {f.name for f in fields(Stage)} - {"objectives", "dev"}
_RUN = {f.name for f in fields(TrainConfig)} - {"stages", "model", "output"}
ObjectiveSpec = str | tuple[str, Mapping[str, Any]]


def train(
    model: str | SentenceEncoder,
    output: str,
    datasets: Mapping[str, Any],
    objectives: Mapping[str, ObjectiveSpec],
    dev: str | Dataset | Any | tuple[Any, ...] | list[Any] | None = None,
    columns: Mapping[str, str] | None = None,
    resume: bool = False,
    show_progress: bool = True,
    **settings: Any,
) -> TrainResult:
    """Fine-tune `model` on several named sets at once, each with its objective; returns the run's result.

    `dev` is one dev set (a spec or a table) or several (a tuple: their mean decides, or `select=SPEC:METRIC`).
    `columns` gives an in-memory table's roles by set name (`{"faq": "anchor=q,positive=a"}`);
    `settings` are Stage fields (epochs, batch_size, lr, sampling, matryoshka, ...) and run fields
    (seed, precision, max_seq_length, checkpoint_steps, ...). `model` may be a loaded SentenceEncoder.
    """
    unknown = set(settings) - _STAGE - _RUN
    if unknown:
        raise SbertError(f"train(): unknown setting {sorted(unknown)[0]!r}; known: {', '.join(sorted(_STAGE | _RUN))}")
    missing = [name for name in datasets if name not in objectives] + [n for n in objectives if n not in datasets]
    if missing:
        raise SbertError(f"train(): set {missing[0]!r} needs both a dataset and an objective")
    given: dict[str, Dataset] = {}
    specs = {name: _spec(name, data, (columns or {}).get(name, ""), given) for name, data in datasets.items()}
    devs = list(dev) if isinstance(dev, tuple | list) else [] if dev is None else [dev]
    dev_specs = tuple(_spec(f"dev{i}" if len(devs) > 1 else "dev", d, "", given) for i, d in enumerate(devs))
    dev_spec = dev_specs[0] if len(dev_specs) == 1 else (dev_specs or None)
    stage = Stage(
        tuple(_objective(objectives[name], specs[name]) for name in datasets),
        dev=dev_spec,
        **{k: v for k, v in settings.items() if k in _STAGE},
    )
    loaded = None if isinstance(model, str) else model
    config = TrainConfig(
        model=model if isinstance(model, str) else "(a model in memory)",
        output=output,
        stages=(stage,),
        **{k: v for k, v in settings.items() if k in _RUN},
    )
    return Trainer(config, show_progress=show_progress, datasets=given, model=loaded).run(resume=resume)


def _spec(name: str, data: Any, columns: str, given: dict[str, Dataset]) -> str:
    """A data spec for `data`: a string is one already; a table in memory is registered under `memory:NAME`."""
    if isinstance(data, str):
        return with_option(data, "columns", columns) if columns else data
    spec = f"memory:{name}"
    given[spec] = data if isinstance(data, Dataset) else from_table(data, name=name, columns=columns)
    return spec


def _objective(spec: ObjectiveSpec, train: str) -> Objective:
    if isinstance(spec, str):
        return Objective(spec, train)
    name, options = spec
    return Objective(name, train, dict(options))
