import json

import pytest
import torch

from sbert.errors import ModelFormatError
from sbert.modules.pooling import Pooling, cls_pool, max_pool, mean_pool


@pytest.fixture
def batch() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    tokens = torch.randn(3, 5, 4)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    # Padding positions hold huge values: any leak into the pooled vector shows.
    tokens[mask == 0] = 1e6
    return tokens, mask


def test_mean_ignores_padding(batch):
    tokens, mask = batch
    got = mean_pool(tokens, mask)
    for i in range(3):
        n = int(mask[i].sum())
        torch.testing.assert_close(got[i], tokens[i, :n].mean(dim=0))


def test_max_ignores_padding(batch):
    tokens, mask = batch
    got = max_pool(tokens, mask)
    for i in range(3):
        n = int(mask[i].sum())
        torch.testing.assert_close(got[i], tokens[i, :n].max(dim=0).values)


def test_cls_takes_first_real_token_with_right_or_left_padding(batch):
    tokens, mask = batch
    torch.testing.assert_close(cls_pool(tokens, mask), tokens[:, 0])
    # Left padding: row i's first real token sits at position T - length_i.
    left_mask, left_tokens = mask.flip(1), tokens.flip(1)
    expected = torch.stack([left_tokens[i, 5 - int(mask[i].sum())] for i in range(3)])
    torch.testing.assert_close(cls_pool(left_tokens, left_mask), expected)


def test_all_padding_row_gives_zero_not_nan():
    tokens = torch.ones(1, 3, 2)
    mask = torch.zeros(1, 3, dtype=torch.long)
    assert torch.equal(mean_pool(tokens, mask), torch.zeros(1, 2))


def test_pooling_module_concatenates_modes(batch):
    tokens, mask = batch
    pool = Pooling(4, ["mean", "max"])
    out = pool({"token_embeddings": tokens, "attention_mask": mask})["sentence_embedding"]
    assert out.shape == (3, 8) and pool.output_dimension == 8
    torch.testing.assert_close(out[:, :4], mean_pool(tokens, mask))


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="unknown pooling mode"):
        Pooling(4, "median")


@pytest.mark.parametrize(
    "config,modes",
    [
        ({"word_embedding_dimension": 8, "pooling_mode_max_tokens": True}, ["max"]),
        ({"word_embedding_dimension": 8, "pooling_mode_cls_token": True}, ["cls"]),
        ({"embedding_dimension": 8, "pooling_mode": "mean", "include_prompt": True}, ["mean"]),
        ({"embedding_dimension": 8, "pooling_mode": ["cls", "mean"]}, ["cls", "mean"]),
    ],
)
def test_reads_legacy_and_new_sentence_transformers_configs(tmp_path, config, modes):
    (tmp_path / "config.json").write_text(json.dumps(config))
    pool = Pooling.load(tmp_path)
    assert pool.modes == modes and pool.embedding_dimension == 8


def test_save_load_round_trip(tmp_path):
    Pooling(6, "cls").save(tmp_path)
    assert Pooling.load(tmp_path).modes == ["cls"]


def test_unsupported_config_names_the_file(tmp_path):
    (tmp_path / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 8, "pooling_mode_weightedmean_tokens": True})
    )
    with pytest.raises(ModelFormatError, match=r"config\.json"):
        Pooling.load(tmp_path)
