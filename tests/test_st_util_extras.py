"""6.2's dataset, gather and naming helpers in `util`, each against 6.2's own in the same process."""

from __future__ import annotations

import functools
import pickle

import pytest
import torch

from sbert import util

st_util = pytest.importorskip("sentence_transformers.util")
datasets = pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def tables():
    queries = datasets.Dataset.from_dict({"query_id": ["q1", "q2", "q3"], "text": ["who", "what", "where"]})
    documents = datasets.Dataset.from_dict({"doc_id": [10, 11, 12, 13], "text": ["a", "b", "c", "d"]})
    train = datasets.Dataset.from_dict({
        "query_id": ["q1", "q3", "q2"], "positive_id": [10, 12, 11], "negative_id": [13, 10, 12],
        "document_ids": [[10, 11, 12], [13, 12, 11], [11, 10, 13]], "scores": [[3.0, 2.0, 1.0]] * 3,
        "source": ["x", "y", "z"],
    })  # fmt: skip
    return queries, documents, train


def rows(lib, train, lookups, **options):
    """Each row read alone, then the whole table read as one batch."""
    resolved = train.with_transform(lib.resolve_ids(lookups, **options))
    return [resolved[i] for i in range(len(resolved))], resolved[:]


OPTIONS = [{}, {"max_list_length": 2}, {"output_format": "lists"},
           {"output_format": "lists", "max_list_length": 1, "keep_columns": ["source"]}]  # fmt: skip


@pytest.mark.parametrize("options", OPTIONS)
def test_resolve_ids_reads_rows_as_6_2_does(tables, options):
    queries, documents, train = tables
    lookups = {"query_id": queries, "document_ids": (documents, "doc_id"), "negative_id": (documents, "doc_id", "text")}
    ours = rows(util, train, lookups, **options)
    assert ours == rows(st_util, train, lookups, **options)
    assert next(iter(ours[0][0])) == "query"  # the anchor first: the losses read columns by position
    pickle.dumps(util.resolve_ids(lookups, **options))  # DataLoader workers get the transform by pickle


def test_resolve_ids_refuses_what_6_2_refuses(tables):
    queries, documents, _ = tables
    ragged = datasets.Dataset.from_dict({"query_id": ["q1", "q2"], "document_ids": [[10], [10, 11]]})
    with pytest.raises(ValueError, match="lengths \\[1, 2\\]"):
        rows(util, ragged, {"query_id": queries, "document_ids": (documents, "doc_id")})
    unknown = datasets.Dataset.from_dict({"query_id": ["q9"]})
    with pytest.raises(KeyError, match="q9"):
        rows(util, unknown, {"query_id": queries})
    two_ids = datasets.Dataset.from_dict({"id": [1], "doc_id": [1], "text": ["a"]})
    with pytest.raises(ValueError, match="cannot infer the ID column"):
        util.resolve_ids({"query_id": two_ids})
    with pytest.raises(ValueError, match="max_list_length"):
        util.resolve_ids({"query_id": queries}, max_list_length=0)


def test_padded_token_stacks_match_6_2():
    torch.manual_seed(0)
    embeddings = [torch.randn(2, t, 4) for t in (3, 5, 1)]
    masks = [torch.ones(2, t, dtype=torch.bool) for t in (3, 5, 1)]
    for name in ("stack_padded_token_embeddings", "cat_padded_token_embeddings"):
        for ours, theirs in zip(getattr(util, name)(embeddings, masks), getattr(st_util, name)(embeddings, masks),
                                strict=True):  # fmt: skip
            assert ours.dtype == theirs.dtype and torch.equal(ours, theirs), name


def test_gathers_without_a_process_group_return_the_input_with_its_gradient():
    x = torch.randn(3, 4, requires_grad=True)
    for gathered in (util.all_gather(x), util.all_gather_with_grad(x)):
        assert torch.equal(gathered, x)
        gathered.sum().backward()
    assert torch.equal(x.grad, torch.full_like(x, 2.0))
    tokens, mask = util.all_gather_padded(torch.randn(2, 3, 4), torch.ones(2, 3, dtype=torch.bool))
    assert tokens.shape == (2, 3, 4) and mask.dtype == torch.bool


def _two_ranks(rank: int, init: str, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    rows = torch.full((2 + rank, 3), float(rank + 1), requires_grad=True)  # 2 rows on rank 0, 3 on rank 1
    gathered = util.all_gather(rows)
    gathered.pow(2).sum().backward()
    tokens, mask = util.all_gather_padded(torch.ones(1, 2 + 2 * rank, 2), torch.ones(1, 2 + 2 * rank, dtype=torch.bool))
    torch.save({"gathered": gathered.detach(), "grad": rows.grad, "tokens": tokens, "mask": mask}, f"{out}.{rank}")
    dist.destroy_process_group()


@pytest.mark.e2e  # two processes on gloo, each importing torch
def test_all_gather_over_two_real_ranks(tmp_path):
    init = f"file://{tmp_path / 'rendezvous'}"
    torch.multiprocessing.spawn(_two_ranks, args=(init, str(tmp_path / "out")), nprocs=2)
    for rank in (0, 1):
        got = torch.load(tmp_path / f"out.{rank}")
        assert got["gathered"].tolist() == [[1.0] * 3] * 2 + [[2.0] * 3] * 3  # rank order, uneven counts
        assert torch.equal(got["grad"], torch.full((2 + rank, 3), 2.0 * (rank + 1)))  # local rows keep their grad
        assert got["tokens"].shape == (2, 4, 2) and got["mask"].tolist() == [[True, True, False, False], [True] * 4]


def test_small_helpers_answer_as_6_2(tmp_path):
    assert util.similarity_fct_name(util.cos_sim) == st_util.similarity_fct_name(st_util.cos_sim) == "cos_sim"
    scaled = functools.partial(util.cos_sim)
    assert util.similarity_fct_name(scaled) == "cos_sim"
    assert util.similarity_fct_name(functools.partial(max, default=0)) == "max(default=0)"
    csv = tmp_path / "eval.csv"
    csv.write_text("epoch,score\n0,0.5\n")
    assert util.append_to_last_row(csv, [0.7]) is True
    assert csv.read_text().splitlines() == ["epoch,score", "0,0.5,0.7"]
    only_header = tmp_path / "empty.csv"
    only_header.write_text("epoch\n")
    assert util.append_to_last_row(only_header, [1]) is False
    was = datasets.is_caching_enabled()
    with util.disable_datasets_caching():
        assert not datasets.is_caching_enabled()
    assert datasets.is_caching_enabled() == was
    q, c = torch.eye(3), torch.eye(3)
    assert util.information_retrieval(q, c, top_k=1) == util.semantic_search(q, c, top_k=1)


def test_sparse_intersection_matches_6_2():
    from sentence_transformers import SparseEncoder as Reference

    import sbert

    torch.manual_seed(0)
    one = torch.relu(torch.randn(50))
    rows = torch.relu(torch.randn(3, 50))
    for left, right in ((one, rows), (one.to_sparse(), rows[0].to_sparse())):
        ours, theirs = sbert.SparseEncoder.intersection(left, right), Reference.intersection(left, right)
        assert ours.is_sparse and torch.equal(ours.to_dense(), theirs.to_dense())
    with pytest.raises(ValueError, match="Expected 1D tensor for embeddings_1"):
        sbert.SparseEncoder.intersection(rows, rows)
