"""Building what a stage trains: tokenized objectives, and the module DDP wraps and checkpoints hold."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from sbert.data import Dataset, load_dataset
from sbert.data.streaming import StreamedDataset
from sbert.encoding.prompted import PromptPlan
from sbert.errors import SbertError
from sbert.losses import AUTO, Loss, auto_objective, build_loss
from sbert.losses.matryoshka import MatryoshkaLoss, parse_matryoshka
from sbert.modules import Features
from sbert.training.config import Stage
from sbert.training.dev_sets import DevSet, load_devs
from sbert.training.prefetch import split_features
from sbert.training.stream_feed import StreamFeed

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder


@dataclass(frozen=True)
class Prepared:
    """One objective, its data tokenized once (token ids per column), and its loss."""

    name: str
    dataset: Dataset
    loss: Loss
    columns: list[list[list[int]]]  # [column][example] -> token ids
    lengths: list[int]  # padded cost of an example: its longest column
    labels: Tensor | None
    truncated: int
    texts: list[frozenset[int]] | None = None  # each example's text ids, for batches without duplicates
    skips: list[int] | None = None  # per column: leading prompt positions pooling leaves out (encoding/prompted.py)
    feed: StreamFeed | None = None  # a streamed table: batches read and tokenized as the plan reaches them


@dataclass(frozen=True)
class StageData:
    """A stage's datasets, read and checked before any training starts."""

    train: list[Dataset]
    dev: list[DevSet]


def preflight(stages: tuple[Stage, ...], skip_bad: bool, given: Mapping[str, Any] | None = None) -> list[StageData]:
    """Read every stage's data and check each objective fits it, so a bad later stage fails at once.

    `given` maps data specs to datasets already in memory (cross-validation folds); other specs are read.
    """
    given = given or {}

    def load(spec: str) -> Dataset:
        return given[spec] if spec in given else load_dataset(spec, skip_bad=skip_bad)

    loaded = []
    for stage in stages:
        train = [load(o.train) for o in stage.objectives]
        for objective, dataset in zip(stage.objectives, train, strict=True):
            if objective.loss is not None:
                check_loss_fits(objective.loss, dataset)
            else:
                build_loss(objective.name, 8, dataset, loss_options(objective.options)[0])  # raises on a mismatch
        loaded.append(StageData(train, load_devs(stage.dev, load)))
    return loaded


def check_loss_fits(loss: Loss, dataset: Dataset) -> None:
    """A one-line error when a loss built by the caller cannot train on `dataset`'s kind of rows."""
    if dataset.kind not in loss.kinds:
        raise SbertError(f"{type(loss).__name__} trains on {' or '.join(loss.kinds)} rows, but {dataset.name} "
                         f"holds {dataset.kind} rows")  # fmt: skip


def choose_objectives(stages: tuple[Stage, ...], data: list[StageData]) -> tuple[tuple[Stage, ...], list[str]]:
    """The stages with each "auto" objective replaced by the one its table's kind trains with, and a line per choice."""
    chosen, lines = [], []
    for stage, stage_data in zip(stages, data, strict=True):
        objectives = []
        for objective, dataset in zip(stage.objectives, stage_data.train, strict=True):
            if objective.name == AUTO:
                objective = replace(objective, name=auto_objective(dataset))
                lines.append(f"{dataset.name}: objective {objective.name} for its {dataset.kind} rows "
                             "(no --objective given; docs/training.md has the rule)")  # fmt: skip
            objectives.append(objective)
        chosen.append(replace(stage, objectives=tuple(objectives)))
    return tuple(chosen), lines


def describe_data(data: list[StageData]) -> list[str]:
    """One line per table read: its examples, the bad lines --skip-bad left out, and each column's role."""
    seen = {d.name: d for stage in data for d in stage.train if d.source}
    return [f"{name}: {len(d)} {d.kind} examples{_skipped(d)}; {d.source}" for name, d in seen.items()]


def _skipped(dataset: Dataset) -> str:
    return f" ({dataset.skipped} bad lines skipped)" if dataset.skipped else ""


def prepare_objectives(
    model: SentenceEncoder, stage: Stage, datasets: list[Dataset], seed: int = 0, index: int = 0
) -> list[Prepared]:
    """Build each objective's loss and tokenize its data once for all epochs (a streamed table: per batch).

    `seed` and `index` (the stage's number) fix a streamed table's order in every epoch.
    """
    if model.router is not None:  # one forward per batch would train the default route alone, silently
        raise ValueError(
            "training a model that starts with a Router is not supported: train each route's model on its own, "
            "then join them with sbert.modules.Router"
        )
    prepared = []
    for objective, dataset in zip(stage.objectives, datasets, strict=True):
        options, prompt_names = loss_options(objective.options)
        loss = objective.loss or build_loss(objective.name, model.chain_dimension, dataset, options)
        if stage.matryoshka:
            loss = MatryoshkaLoss(None, loss, *parse_matryoshka(stage.matryoshka), width=model.chain_dimension)
        loss.check_model(list(model))
        if loss.token_level != model.token_level:
            kind = "a multi-vector (ColBERT) model" if model.token_level else "a single-vector model"
            use = "colbert" if model.token_level else "a sentence-vector objective (mnrl, ...)"
            raise SbertError(f"objective {objective.name!r} does not train {kind}: use {use}")
        columns, truncated = [], 0
        plans = column_prompts(model, prompt_names, len(dataset.texts[0]))
        skips = [plan.skip for plan in plans]
        if isinstance(dataset, StreamedDataset) and dataset.stream is not None:
            feed = StreamFeed(dataset.stream, model.column_tokens, plans, seed, index)
            prepared.append(Prepared(objective.name, dataset, loss, [], [], None, 0, None,
                                     skips if any(skips) else None, feed))  # fmt: skip
            continue
        for c, plan in enumerate(plans):
            ids, cut = model.column_tokens(c)(plan.apply(dataset.column(c)))
            columns.append(ids)
            truncated += len(cut)
        lengths = [max(len(col[i]) for col in columns) for i in range(len(dataset))]
        labels = torch.tensor(dataset.labels, dtype=torch.float32) if dataset.labels is not None else None
        texts = text_ids(dataset) if loss.in_batch_negatives and not stage.allow_duplicates else None
        prepared.append(Prepared(objective.name, dataset, loss, columns, lengths, labels, truncated, texts,
                                 skips if any(skips) else None))  # fmt: skip
    return prepared


def loss_options(options: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """An objective's options for its loss, and its `prompts` option split into per-column prompt names."""
    rest = dict(options)
    names = rest.pop("prompts", None)
    return rest, [] if names is None else [n.strip() for n in str(names).split(",")]


def column_prompts(model: SentenceEncoder, names: list[str], columns: int) -> list[PromptPlan]:
    """Each column's prompt plan: the model's prompt of that name (none for an empty name or no option).

    `--option prompts=query,document` puts the model's query prompt before the anchors and its
    document prompt before the other columns (the last name repeats). The plan comes from the same
    policy as encode, so a Pooling with include_prompt=false leaves the prompt out in training too.
    """
    if not names:
        return [PromptPlan()] * columns
    named = [names[min(c, len(names) - 1)] for c in range(columns)]
    return [model.prompt_plan(prompt_name=n) if n else PromptPlan() for n in named]


def text_ids(dataset: Dataset) -> list[frozenset[int]]:
    """Each example's texts as ids (equal texts, equal ids), across all its columns."""
    ids: dict[object, int] = {}
    # An image (an array is not hashable; a PIL image hashes by identity) counts by its object.
    keys = [[t if isinstance(t, str) else id(t) for t in example] for example in dataset.texts]
    return [frozenset(ids.setdefault(t, len(ids)) for t in example) for example in keys]


class TrainModule(nn.Module):
    """The encoder plus every loss of a stage (heads included): the unit DDP wraps and checkpoints hold."""

    def __init__(self, model: SentenceEncoder, losses: list[Loss]) -> None:
        super().__init__()
        self.model = model
        self.losses = nn.ModuleList(losses)
        _freeze_unused_pooler(model)

    def forward(
        self, objective: int, columns: list[Features], labels: Tensor | None, splits: list[int] | None = None
    ) -> Tensor:
        """Embed each text column (all in one forward when `splits` is given) and apply the objective's loss."""
        loss = self.losses[objective]
        assert isinstance(loss, Loss)
        if loss.needs_model:  # the loss runs the encoder itself (cached contrastive loss)
            return loss.forward_model(self.model, _unfused(columns, splits), labels)
        if splits is not None:
            outputs = split_features(self.model(columns[0]), splits)
        else:
            outputs = [self.model(features) for features in columns]
        return loss.forward_features(outputs, labels)

    def needs_unused_parameters(self) -> bool:
        """Whether some step leaves trainable parameters without a gradient (DDP must then look for them).

        That happens when objectives take turns and one of them has its own head.
        """
        heads = [loss for loss in self.losses if any(p.requires_grad for p in loss.parameters(recurse=True))]
        return len(self.losses) > 1 and bool(heads)


def _unfused(columns: list[Features], splits: list[int] | None) -> list[Features]:
    if splits is None:
        return columns
    # Rows of a fused batch are cut apart again; the shared padding width is harmless.
    return split_features(columns[0], splits)


def _freeze_unused_pooler(model: SentenceEncoder) -> None:
    # The encoder's own pooler ([CLS] dense + tanh) feeds nothing sentence embeddings use: frozen, it
    # gets no AdamW update (it would get none anyway, having no gradient) and DDP need not hunt for it.
    pooler = getattr(getattr(model.input_module, "auto_model", None), "pooler", None)
    if isinstance(pooler, nn.Module):
        pooler.requires_grad_(False)
