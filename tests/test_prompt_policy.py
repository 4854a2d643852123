"""One prompt policy for every caller: chunk windows, training and the packed pooling all leave the
prompt out where the Pooling says include_prompt=false, exactly as encode does."""

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.backends.packed_chain import drop_leading
from sbert.backends.packing import packed_max, packed_mean, unpack
from sbert.encoding.engine import embed_rows
from sbert.encoding.long_text import special_tokens, windows
from sbert.modules.pooling import max_pool, mean_pool, without_prompt

PROMPTS = {"query": "query: ", "document": "passage: "}
LONG = " ".join(f"word{i % 37} and more text number {i}" for i in range(60))


@pytest.fixture
def excluding(tiny_dirs, tmp_path) -> SentenceEncoder:
    """A tiny BERT whose Pooling leaves the prompt out, with query and document prompts."""
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    model[1].include_prompt = False
    model.settings.prompts = dict(PROMPTS)
    model.save(tmp_path / "m")
    return SentenceEncoder.load(tmp_path / "m", device="cpu")


def test_every_chunk_window_carries_the_prompt_and_pools_its_own_text(excluding):
    excluding.max_seq_length = 24
    plan = excluding.prompt_plan(task="query")
    rows = windows(excluding.transformer, LONG, plan.text)
    opening, _ = special_tokens(excluding.transformer)
    head = opening + excluding.transformer.tokenizer(plan.text, add_special_tokens=False)["input_ids"]
    assert len(rows) > 3 and all(row[: len(head)] == head and len(row) <= 24 for row in rows)
    assert plan.skip == len(head)  # the positions pooling skips are exactly [CLS] + the prompt, in every window
    want = embed_rows(excluding.backend(), rows, excluding.chain_dimension, skip=plan.skip).mean(axis=0)
    got = excluding.encode_query(LONG, long_text="chunk")
    assert np.abs(got - want).max() <= 1e-5
    # Windows without the prompt (the bug: only the first had it) give another vector.
    bare = windows(excluding.transformer, LONG)
    assert np.abs(embed_rows(excluding.backend(), bare, excluding.chain_dimension).mean(axis=0) - got).max() > 1e-3


def test_short_inputs_chunk_as_they_truncate(excluding):
    texts = ["a short query", "another one"]
    assert np.abs(excluding.encode_query(texts, long_text="chunk") - excluding.encode_query(texts)).max() <= 1e-6


@pytest.mark.parametrize("fuse", [False, True])
def test_training_pools_the_tokens_inference_pools(excluding, fuse):
    from sbert.data.common import Dataset
    from sbert.training import Objective, Stage
    from sbert.training.prefetch import make_batch, split_features
    from sbert.training.setup import prepare_objectives

    pairs = [("how do cats sleep", "cats sleep curled up"), ("rain tomorrow?", "the forecast says rain")]
    stage = Stage((Objective("mnrl", "d", {"prompts": "query,document"}),))
    prepared = prepare_objectives(excluding, stage, [Dataset("d", "pair", pairs)])[0]
    assert prepared.skips is not None and all(s > 1 for s in prepared.skips)
    batch = make_batch(
        [excluding.transformer.pad] * len(prepared.columns),
        prepared.columns,
        None,
        0,
        range(2),
        fuse=fuse,
        skips=prepared.skips,
    )
    with torch.no_grad():
        if fuse:
            outputs = split_features(excluding(batch.columns[0]), batch.splits)
        else:
            outputs = [excluding(f) for f in batch.columns]
    queries = outputs[0]["sentence_embedding"].numpy()
    documents = outputs[1]["sentence_embedding"].numpy()
    assert np.abs(queries - excluding.encode_query([q for q, _ in pairs])).max() <= 1e-5
    assert np.abs(documents - excluding.encode_document([d for _, d in pairs])).max() <= 1e-5


def test_packed_pooling_skips_the_prompt_like_the_padded_mask():
    torch.manual_seed(0)
    lengths, skip = [5, 9, 3, 7], 2
    cu = torch.tensor([0, *np.cumsum(lengths)], dtype=torch.int32)
    tokens = torch.randn(int(cu[-1]), 6)
    kept, kept_cu = drop_leading(tokens, cu, skip)
    grid, mask = unpack(tokens, cu, max(lengths))
    masked = without_prompt(mask, skip)
    assert torch.allclose(packed_mean(kept, kept_cu), mean_pool(grid, masked), atol=1e-6)
    assert torch.allclose(packed_max(kept, kept_cu), max_pool(grid, masked), atol=1e-6)
    assert drop_leading(tokens, cu, 0)[0] is tokens


def test_per_row_prompt_lengths_mask_each_row(excluding):
    mask = torch.ones(3, 6, dtype=torch.long)
    mask[2, :2] = 0  # left padding: the prompt starts after it
    out = without_prompt(mask, torch.tensor([1, 3, 2]))
    assert out.tolist() == [[0, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1]]


def test_the_task_picks_the_prompt_and_an_unknown_task_is_refused(excluding):
    assert excluding.prompt_plan(task="document").text == "passage: "
    assert excluding.prompt_plan(task="query", prompt="x: ").text == "x: "
    assert excluding.prompt_plan().text == ""
    with pytest.raises(ValueError, match="unknown task 'answer'; known: query, document"):
        excluding.encode("hi", task="answer")


@pytest.mark.parametrize("task", [None, "query", "document"])
def test_counted_token_rows_embed_as_encode_embeds_the_texts(excluding, task):
    # A server counts each request's tokens once (token_rows) and embeds those ids later (encode_token_rows).
    excluding.max_seq_length, excluding.settings.truncate_dim = 32, 16
    texts = ["a short query", LONG, "another one, a bit longer"]
    rows, cut = excluding.token_rows(texts, task)
    assert cut == [1] and max(map(len, rows)) == 32
    want = excluding.encode(texts, task=task, on_truncation="ignore")
    got = excluding.encode_token_rows(rows, task)
    assert got.shape == want.shape == (3, 16) and np.array_equal(got, want)
    if task is not None:  # the prompt's tokens stay out of pooling: the task's plan, not the rows, says how many
        assert np.abs(excluding.encode_token_rows(rows) - got).max() > 1e-4


def test_a_served_group_mixing_tasks_pools_each_rows_prompt_as_encode_does(excluding):
    # The server's batcher embeds the token rows each request was counted with; one merged group holds
    # query, document and plain rows, each pooled under its own task's prompt plan.
    import asyncio

    from sbert.serve.metrics import Metrics
    from sbert.serve.server import dense_batcher
    from sbert.serve.settings import ServeSettings

    texts = {"query": ["how do cats sleep", "rain tomorrow?"], "document": ["cats sleep curled up"], None: ["plain"]}

    async def served() -> tuple[list[np.ndarray], int]:
        batcher = dense_batcher(ServeSettings(model="m", max_wait_ms=50), excluding, Metrics())
        batcher.start()
        jobs = []
        for task, group in texts.items():
            rows = excluding.token_rows(group, task)[0]
            jobs.append(batcher.submit([(task, row) for row in rows], [len(row) for row in rows]))
        vectors = await asyncio.gather(*jobs)  # queued together: one group
        await batcher.stop()
        counts = [s.value for s in batcher.metrics.batch_texts.collect()[0].samples if s.name.endswith("_count")]
        return vectors, int(sum(counts))

    vectors, groups = asyncio.run(served())
    assert groups == 1
    for got, (task, group) in zip(vectors, texts.items(), strict=True):
        np.testing.assert_allclose(got, excluding.encode(group, task=task), atol=1e-6)
