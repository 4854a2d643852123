"""Hard-negative mining on SNLI dev entailment pairs with the real default model: the false-negative
guard, resuming after a kill, the rows the triplets: reader takes, and bad settings."""

import json

import pytest

from sbert import SentenceEncoder
from sbert.data import load_dataset
from sbert.errors import SbertError
from sbert.search import negatives
from sbert.search.negatives import MiningSettings, anchor_positive_pairs, mine_to_file, pick_negatives
from tests.cli_runner import run_cli
from tests.conftest import SHARED_DATA

SNLI_DEV = f"nli:{SHARED_DATA / 'snli'}:dev"


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str]]:
    return anchor_positive_pairs(load_dataset(SNLI_DEV))[:300]


def test_guard_drops_the_pair_itself_and_candidates_too_close_to_the_positive():
    candidates = [(0.95, "the positive"), (0.9, "near copy"), (0.7, "good negative"), (0.6, "anchor"), (0.5, "other")]
    settings = MiningSettings(margin=0.1, negatives=2)
    assert pick_negatives("anchor", "the positive", candidates, 0.9, settings) == ["good negative", "other"]
    capped = MiningSettings(margin=None, max_score=0.55, negatives=3)
    assert pick_negatives("anchor", "the positive", candidates, 0.9, capped) == ["other"]


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_mining_resumes_after_a_kill_and_writes_triplet_rows(pairs, tmp_path, monkeypatch):
    model = SentenceEncoder.load(device="cpu")
    settings = MiningSettings(rank_max=20, negatives=2, block=100)
    whole = tmp_path / "whole.jsonl"
    counts = mine_to_file(model, pairs, None, whole, settings)
    assert counts["pairs"] == 300 and counts["rows"] > 400
    real, calls = negatives.mine_block, []

    def dies_on_the_third_block(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(negatives, "mine_block", dies_on_the_third_block)
    cut = tmp_path / "cut.jsonl"
    with pytest.raises(KeyboardInterrupt):
        mine_to_file(model, pairs, None, cut, settings)
    assert not cut.exists() and (tmp_path / "cut.jsonl.partial").is_file()
    monkeypatch.setattr(negatives, "mine_block", real)
    partial = (tmp_path / "cut.jsonl.partial").read_bytes()
    # Another model, corpus or setting must not append to what the first run mined.
    other_corpus = [p for _, p in pairs][::-1]
    for changed, args in (("settings", (model, pairs, None, cut, MiningSettings(rank_max=19, negatives=2, block=100))),
                          ("corpus", (model, pairs, other_corpus, cut, settings)),
                          ("pairs", (model, pairs[:299], None, cut, settings))):  # fmt: skip
        with pytest.raises(SbertError, match=f"mined it with another .*{changed}"):
            mine_to_file(*args)
    model.settings.prompts = {"query": "query: "}
    with pytest.raises(SbertError, match="another prompts"):
        mine_to_file(model, pairs, None, cut, settings)
    model.settings.prompts = {}
    assert (tmp_path / "cut.jsonl.partial").read_bytes() == partial  # refusals touch nothing
    mine_to_file(model, pairs, None, cut, settings)  # resumes at the third block
    assert cut.read_text() == whole.read_text()
    triplets = load_dataset(f"triplets:{whole}")
    assert triplets.kind == "triplet" and len(triplets) == counts["rows"]
    positives = {p for _, p in pairs}
    assert all(neg != pos and neg in positives for _, pos, neg in triplets.texts)


def test_n_tuples_with_a_corpus_and_the_command(pairs, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(h for _, h in anchor_positive_pairs(load_dataset(SNLI_DEV))[300:900]) + "\n")
    (tmp_path / "pairs.tsv").write_text("".join(f"{a}\t{p}\n" for a, p in pairs[:50]))
    out = tmp_path / "mined.jsonl"
    run = run_cli(
        "mine-negatives", "--pairs", f"pairs:{tmp_path / 'pairs.tsv'}", "--corpus", f"text:{corpus}",
        "--output", str(out), "--negatives", "3", "--n-tuple", "--rank-min", "2",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "rows from 50 pairs" in run.stderr and "mining" in run.stderr  # progress and summary on stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all(set(r) == {"anchor", "positive", "negative_1", "negative_2", "negative_3"} for r in rows)
    tuples = load_dataset(f"triplets:{out}")
    assert len(tuples.texts[0]) == 5


def test_n_tuple_rows_always_hold_every_negative(tmp_path):
    from sbert.search.negatives import mining_rows

    # The guard may leave a pair fewer negatives than asked; the triplets: reader refuses ragged rows.
    mined = [("a", "p", ["n1", "n2", "n3"]), ("b", "q", ["m1"])]
    rows = [row for m in mined for row in mining_rows(m, n_tuple=True, wanted=3)]
    assert [r["anchor"] for r in rows] == ["a"]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert len(load_dataset(f"triplets:{tmp_path / 't.jsonl'}").texts[0]) == 5
    assert len(mining_rows(mined[1], n_tuple=False, wanted=3)) == 1


def test_bad_settings_say_so_in_one_line(pairs, tmp_path):
    model = SentenceEncoder.load(device="cpu")
    with pytest.raises(SbertError, match="corpus: it is empty"):
        mine_to_file(model, pairs, [], tmp_path / "x.jsonl", MiningSettings())
    with pytest.raises(SbertError, match="beyond the corpus of 2 texts"):
        mine_to_file(model, pairs, ["a", "b"], tmp_path / "x.jsonl", MiningSettings(rank_min=5, rank_max=10))
    with pytest.raises(SbertError, match="mining needs"):
        anchor_positive_pairs(load_dataset(f"stsb:{SHARED_DATA / 'stsbenchmark' / 'sts-dev.csv'}"))
    assert not (tmp_path / "x.jsonl").exists()
