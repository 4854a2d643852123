"""Position ids as the backbone numbers them: RoBERTa's rule (any padding index, a padding token inside a
text) in every packed forward, against transformers' own numbering and sentence-transformers' vectors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import AutoConfig
from transformers.models.roberta.modeling_roberta import RobertaEmbeddings

import sbert
from sbert.backends.packing import pack
from sbert.vectors.positions import Positions, position_limit, position_rule
from tests.tiny_models import CORPUS, build_roberta

TEXTS = [*CORPUS[:4], "fill the <pad> here", "<pad> a man <pad><pad> is playing"]


@pytest.mark.parametrize("padding_idx", [0, 1, 3])
def test_packed_positions_are_transformers_numbering_row_by_row(padding_idx):
    gen = torch.Generator().manual_seed(padding_idx)
    rows = [torch.randint(0, 6, (n,), generator=gen).tolist() for n in (7, 1, 12, 4)]  # ids 0-5 hit the padding id
    got = pack(rows, Positions(padding_idx)).position_ids.tolist()
    number = RobertaEmbeddings.create_position_ids_from_input_ids
    want = [p for r in rows for p in number(torch.tensor([r]), padding_idx)[0].tolist()]
    assert got == want


def test_the_rule_and_the_limit_come_from_the_config(tmp_path):
    config = AutoConfig.for_model("roberta", pad_token_id=0, max_position_embeddings=66)
    assert position_rule(config) == Positions(0) and position_limit(config) == 65  # not (0 or 1) + 1
    assert position_rule(AutoConfig.for_model("mpnet", pad_token_id=0)) == Positions(1)  # MPNet's is fixed at 1
    assert position_rule(AutoConfig.for_model("bert")) == Positions()


@pytest.fixture(scope="module", params=[1, 0], ids=["pad1", "pad0"])
def roberta(request, tmp_path_factory):
    folder = build_roberta(tmp_path_factory.mktemp(f"roberta{request.param}"))
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"pad_token_id": request.param}))
    return folder


def test_roberta_vectors_match_sentence_transformers_whatever_the_padding_index(roberta):
    from sentence_transformers import SentenceTransformer

    want = SentenceTransformer(str(roberta), device="cpu").encode(TEXTS, convert_to_numpy=True)
    model = sbert.load(str(roberta))
    assert model.backend("torch").packed  # the packed forward is the one under test
    np.testing.assert_allclose(model.encode(TEXTS), want, atol=2e-5)
    np.testing.assert_allclose(model.encode(TEXTS[-2:]), want[-2:], atol=2e-5)  # alone, too
