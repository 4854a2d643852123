"""The evaluation suite: STS rules, SentEval transfer protocol, baselines, reports and their errors."""

import json
import os

import numpy as np
import pytest
from scipy.stats import spearmanr

from sbert.baselines.glove import GloveEncoder, tokens
from sbert.cli.main import main
from sbert.data.common import DataFormatError
from sbert.data.senteval import read_task, read_transfer_dir
from sbert.errors import ModelFormatError
from sbert.evaluation.tasks import load_tasks, run_task
from sbert.evaluation.transfer import PROTOCOLS, Protocol, evaluate_transfer, fit_path, stratified_folds
from tests.conftest import SHARED_DATA


def angle_table(golds: list[float], sign: float = 1.0) -> GloveEncoder:
    """Words a{i}, b{i} whose vectors have cosine sign * gold_i (gold in [0, 1])."""
    words, rows = [], []
    for i, g in enumerate(golds):
        theta = np.arccos(np.clip(sign * g, -1, 1))
        words += [f"a{i}", f"b{i}"]
        rows += [[1.0, 0.0], [np.cos(theta), np.sin(theta)]]
    return GloveEncoder(words, np.array(rows, dtype=np.float32))


def write_sts_year(folder, subsets: dict[str, list[tuple[str, str, str]]]) -> None:
    folder.mkdir(parents=True)
    for name, rows in subsets.items():
        (folder / f"STS.input.{name}.txt").write_text("".join(f"{a}\t{b}\n" for a, b, _ in rows), encoding="utf-8")
        (folder / f"STS.gs.{name}.txt").write_text("".join(f"{g}\n" for _, _, g in rows), encoding="utf-8")


def test_perfect_model_scores_100_and_reversed_minus_100(tmp_path):
    golds = np.linspace(0, 1, 12).tolist()
    rows = "".join(f"x\tx\tx\tx\t{5 * g}\ta{i}\tb{i}\n" for i, g in enumerate(golds))
    (tmp_path / "sts.csv").write_text(rows, encoding="utf-8")
    (task,) = load_tasks(f"stsb:{tmp_path / 'sts.csv'}")
    assert run_task(angle_table(golds), task).scores["spearman"] == pytest.approx(100)
    assert run_task(angle_table(golds, -1.0), task).scores["spearman"] == pytest.approx(-100)


def test_sts_year_pools_subsets_and_skips_blank_gold_lines(tmp_path):
    golds = [0.1, 0.9, 0.4, 0.7, 0.2, 0.8, 0.3]
    first = [(f"a{i}", f"b{i}", f"{5 * golds[i]}") for i in range(4)]
    second = [(f"a{i}", f"b{i}", f"{5 * golds[i]}") for i in range(4, 7)] + [("a0", "b0", "")]  # blank: skipped
    write_sts_year(tmp_path / "STS14-en-test", {"news": first, "forum": second})
    (task,) = load_tasks(f"sts:{tmp_path / 'STS14-en-test'}")
    assert task.column == "STS14" and len(task.dataset) == 7 and set(task.subsets) == {"news", "forum"}
    # A noisy model: the pooled score is one Spearman over all 7 pairs, not a mean of subset scores.
    noisy = angle_table([0.3, 0.8, 0.5, 0.6, 0.1, 0.9, 0.2])
    scores = run_task(noisy, task).scores
    expected = 100 * spearmanr([0.3, 0.8, 0.5, 0.6, 0.1, 0.9, 0.2], golds).statistic
    assert scores["spearman"] == pytest.approx(expected)
    assert scores["subsets"]["forum"] == pytest.approx(100 * spearmanr([0.1, 0.9, 0.2], golds[4:]).statistic)


def test_folds_are_stratified_and_seeded():
    labels = [0] * 70 + [1] * 30
    folds = stratified_folds(labels, 10, seed=3)
    assert sorted(np.concatenate(folds).tolist()) == list(range(100))
    assert all(sum(labels[i] for i in fold) == 3 and len(fold) == 10 for fold in folds)
    assert [f.tolist() for f in folds] == [f.tolist() for f in stratified_folds(labels, 10, seed=3)]
    assert [f.tolist() for f in folds] != [f.tolist() for f in stratified_folds(labels, 10, seed=4)]


def separable_glove(n: int) -> GloveEncoder:
    rng = np.random.default_rng(0)
    words = [f"good{i}" for i in range(n)] + [f"bad{i}" for i in range(n)]
    vectors = np.concatenate([rng.normal(2, 1, (n, 4)), rng.normal(-2, 1, (n, 4))]).astype(np.float32)
    return GloveEncoder(words, vectors)


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_binary_task_cross_validation_and_mrpc_pairs(tmp_path):
    mr = tmp_path / "MR"
    mr.mkdir()
    (mr / "rt-polarity.pos").write_text("".join(f"good{i}\n" for i in range(40)), encoding="utf-8")
    (mr / "rt-polarity.neg").write_text("".join(f"bad{i}\n" for i in range(40)), encoding="utf-8")
    scores = evaluate_transfer(separable_glove(40), read_task("MR", mr))
    assert scores["accuracy"] == pytest.approx(100.0)
    mrpc = tmp_path / "MRPC"
    mrpc.mkdir()
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    rows = [f"{int(i % 2 == 0)}\t{i}\t{i}\tgood{i}\t{'good' if i % 2 == 0 else 'bad'}{i}\n" for i in range(40)]
    for name, part in (("train", rows[:30]), ("test", rows[30:])):
        (mrpc / f"msr_paraphrase_{name}.txt").write_text(header + "".join(part), encoding="utf-8")
    task = read_task("MRPC", mrpc)
    assert task.pairs and len(task.test[1]) == 10
    assert evaluate_transfer(separable_glove(40), task)["accuracy"] >= 90


def test_warm_started_c_path_equals_independent_fits():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 12))
    y = (x[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(int)
    grid = PROTOCOLS["senteval"].c_grid
    for c, fitted in zip(grid, fit_path(x, y, grid, 0, standardize=False), strict=True):
        cold = LogisticRegression(C=c, max_iter=2000, random_state=0).fit(x, y)
        assert np.abs(fitted.coef - cold.coef_).max() < 1e-2  # both stop at lbfgs's tolerance
        assert (fitted.predict(x) == cold.predict(x)).mean() > 0.99


@pytest.mark.e2e  # long (make test's 6-minute budget); CI runs it in the e2e step
def test_senteval_protocol_is_the_default_and_edges_warn(tmp_path, caplog):
    assert PROTOCOLS["senteval"] == Protocol((0.25, 0.5, 1.0, 2.0, 4.0, 8.0), 10, False)
    mr = tmp_path / "MR"
    mr.mkdir()
    (mr / "rt-polarity.pos").write_text("".join(f"good{i}\n" for i in range(40)), encoding="utf-8")
    (mr / "rt-polarity.neg").write_text("".join(f"bad{i}\n" for i in range(40)), encoding="utf-8")
    with caplog.at_level("WARNING", logger="sbert.evaluation.transfer"):
        evaluate_transfer(separable_glove(40), read_task("MR", mr))
    # perfectly separable data: every C is perfect and the smallest one wins the tie, on the edge
    assert any("on the edge of the grid" in r.getMessage() for r in caplog.records)


def test_trec_and_senteval_folder_layout(tmp_path):
    trec = tmp_path / "downstream" / "TREC"
    trec.mkdir(parents=True)
    (trec / "train_5500.label").write_text("DESC:manner How did serfdom develop ?\nHUM:ind Who killed Gandhi ?\n")
    (trec / "TREC_10.label").write_text("HUM:ind Who wrote Hamlet ?\n")
    (task,) = read_transfer_dir(tmp_path / "downstream")
    assert task.name == "TREC" and task.classes == ("DESC", "HUM") and task.test == ([("Who wrote Hamlet ?",)], [1])
    (trec / "TREC_10.label").write_text("HUM Who wrote Hamlet ?\n")
    with pytest.raises(DataFormatError, match=r"TREC_10.label:1: expected LABEL:fine"):
        read_transfer_dir(tmp_path / "downstream")


def test_senteval_files_as_they_ship_latin1_and_blank_lines(tmp_path):
    trec = tmp_path / "downstream" / "TREC"
    trec.mkdir(parents=True)
    # TREC's train_5500.label holds Latin-1 bytes (SentEval opens it as Latin-1)
    (trec / "train_5500.label").write_bytes(b"HUM:ind Who was Pel\xe9 ?\nDESC:def What is a caf\xe9 ?\n")
    (trec / "TREC_10.label").write_text("HUM:ind Who wrote Hamlet ?\n", encoding="utf-8")
    cr = tmp_path / "downstream" / "CR"
    cr.mkdir()
    # a blank line is an (empty) example for SentEval: CR has 3,775 examples counted that way
    (cr / "custrev.pos").write_text("great  phone\n\nlove it\n", encoding="utf-8")
    (cr / "custrev.neg").write_text("broke after a day\n", encoding="utf-8")
    tasks = {t.name: t for t in read_transfer_dir(tmp_path / "downstream")}
    assert tasks["TREC"].train[0][0] == ("Who was Pelé ?",)
    assert tasks["CR"].size() == 4 and ("great phone",) in tasks["CR"].pool[0] and ("",) in tasks["CR"].pool[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a\tb\tc\n", r"sts.csv:1: expected at least 7"),
        ("x\tx\tx\tx\t2.5\ts\tt\nx\tx\tx\tx\thigh\ts\tt\n", r"sts.csv:2: score 'high'"),
    ],
)
def test_bad_sts_files_name_file_and_line(tmp_path, content, message):
    (tmp_path / "sts.csv").write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError, match=message):
        load_tasks(f"stsb:{tmp_path / 'sts.csv'}")


def test_unknown_task_and_missing_file(tmp_path, capsys):
    with pytest.raises(DataFormatError, match=r"known: .*transfer.*mrpc"):
        load_tasks("sts17:x")
    assert main(["eval", "--model", "glove", "--task", f"stsb:{tmp_path / 'nope.csv'}"]) == 2
    assert "nope.csv: no such file" in capsys.readouterr().err


def test_glove_text_file_and_tokens(tmp_path):
    (tmp_path / "g.txt").write_text("the 1 0\ncat 0 1\n, 5 5\n", encoding="utf-8")
    glove = GloveEncoder.from_text(tmp_path / "g.txt")
    np.testing.assert_allclose(glove.encode(["The cat, the"]), [[7 / 4, 6 / 4]])
    assert glove.encode(["unknown words"]).tolist() == [[0.0, 0.0]]
    assert tokens("Don't stop.") == ["don't", "stop", "."]
    (tmp_path / "bad.txt").write_text("the 1 0\ncat 0\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad.txt:2"):
        GloveEncoder.from_text(tmp_path / "bad.txt")


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_eval_cli_writes_tables_and_plots_and_report_merges(tmp_path, capsys):
    sts = SHARED_DATA / "stsbenchmark" / "sts-test.csv"
    assert main(["eval", "--model", "glove", "--task", f"stsb:{sts}", "--output", str(tmp_path / "glove")]) == 0
    run = json.loads((tmp_path / "glove" / "results.json").read_text())
    assert 30 < run["tasks"][f"stsb:{sts}"]["headline"] < 60  # GloVe 6B 50d average on STSb test
    assert (tmp_path / "glove" / "scatter-STSb.png").stat().st_size > 5000
    assert "| glove | " in (tmp_path / "glove" / "results.md").read_text()
    second = dict(run, model="glove again")
    (tmp_path / "again.json").write_text(json.dumps(second))
    out = tmp_path / "report"
    assert main(["report", str(tmp_path / "glove" / "results.json"), str(tmp_path / "again.json"), "-o", str(out)]) == 0
    table = (out / "report.md").read_text()
    assert "| glove | " in table and "| glove again | " in table and (out / "report.png").is_file()
    assert oct((out / "report.md").stat().st_mode & 0o044) == oct(0o044 & ~current_umask() & 0o777)
    # two files of one model (one task each) make one row of the paper table
    mrpc = {"model": "glove", "tasks": {"mrpc:X": {"headline": 70.0, "column": "MRPC", "metric": "accuracy",
                                                    "f1": 80.5, "C": 8.0}}}  # fmt: skip
    (tmp_path / "mrpc.json").write_text(json.dumps(mrpc))
    assert main(["report", str(tmp_path / "glove" / "results.json"), str(tmp_path / "mrpc.json"), "-o", str(out)]) == 0
    table = (out / "report.md").read_text()
    assert table.count("| glove | ") == 4  # table 1 row, table 5 row, and the two tasks
    assert "F1 80.50, C 8" in table
    (tmp_path / "broken.json").write_text('{"model": 1,')
    assert main(["report", str(tmp_path / "broken.json"), "-o", str(out)]) == 2
    assert "broken.json:1: not valid JSON" in capsys.readouterr().err


def test_cross_encoder_trains_saves_loads_and_scores_sts(tiny_dirs, tmp_path):
    from sbert.baselines import load_baseline
    from sbert.data import load_dataset
    from sbert.reranker.model import CrossEncoder
    from sbert.training.cross_encoder import fit_cross_encoder

    lines = (SHARED_DATA / "stsbenchmark" / "sts-train.csv").read_text(encoding="utf-8").splitlines()[:64]
    (tmp_path / "train.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = load_dataset(f"stsb:{tmp_path / 'train.csv'}")
    model = CrossEncoder.new(tiny_dirs["bert"])
    before = model.predict(data.texts[:8])
    fit_cross_encoder(model, data)
    after = model.predict(data.texts[:8])
    assert after.shape == (8,) and ((after >= 0) & (after <= 1)).all() and not np.allclose(before, after)
    model.save(tmp_path / "cross")
    loaded = load_baseline(f"cross:{tmp_path / 'cross'}")
    np.testing.assert_allclose(loaded.predict(data.texts[:8]), after, atol=1e-6)
    (task,) = load_tasks(f"stsb:{tmp_path / 'train.csv'}")
    scores = run_task(loaded, task).scores
    assert -100 <= scores["spearman"] <= 100 and scores["size"] == 64
    with pytest.raises(ModelFormatError, match="not a cross-encoder"):
        load_baseline(f"cross:{tiny_dirs['bert']}")


def test_evaluation_encodes_in_fp32_whatever_the_device(tiny_dirs, monkeypatch):
    # On a GPU, precision="auto" is bf16: dev-set selection would then differ from the CPU's.
    from sbert import SentenceEncoder
    from sbert.data import load_dataset
    from sbert.evaluation import evaluate

    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    asked: list[str] = []
    real = model.encode
    monkeypatch.setattr(model, "encode", lambda texts, **kw: (asked.append(kw.get("precision")), real(texts, **kw))[1])
    evaluate(model, load_dataset(f"stsb:{SHARED_DATA / 'stsbenchmark' / 'sts-dev.csv'}").subset(list(range(20)), "d"))
    assert asked == ["fp32"]
