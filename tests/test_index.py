"""The FAISS + SQLite index folder, clustering, and the `sbert index` / `sbert search` commands."""

import json
import logging

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.backends.cache import model_digest
from sbert.cli.main import main
from sbert.errors import SbertError
from sbert.search.cluster import agglomerative, community_detection, kmeans
from sbert.search.exact import cos_sim, semantic_search
from sbert.search.index import INDEX_FILE, INFO_FILE, IndexFolderError, SearchIndex, build_index


def _vectors(n: int = 600, dim: int = 16, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
def test_index_round_trip_matches_exact_search(kind, tmp_path):
    vectors = _vectors()
    texts = [f"text {i}" for i in range(len(vectors))]
    build_index(vectors, texts, tmp_path / "idx", kind, "m", "digest")
    index = SearchIndex(tmp_path / "idx")
    hits = index.search(vectors[:20], top_k=5)
    _, exact = semantic_search(vectors[:20], vectors, top_k=5)
    recall = np.mean([len({h.id for h in row} & set(ex.tolist())) / 5 for row, ex in zip(hits, exact, strict=True)])
    assert recall >= (1.0 if kind == "flat" else 0.8)
    assert hits[3][0].id == 3 and hits[3][0].text == "text 3" and hits[3][0].score == pytest.approx(1.0, abs=1e-4)


def test_bad_folders_give_clear_errors(tmp_path):
    with pytest.raises(IndexFolderError, match="no index here"):
        SearchIndex(tmp_path)
    build_index(_vectors(50), [str(i) for i in range(50)], tmp_path / "idx", "flat", "m", "d1")
    index = SearchIndex(tmp_path / "idx")
    with pytest.raises(IndexFolderError, match="built with model 'm'"):
        index.check_model("other digest", 16)
    (tmp_path / "idx" / INDEX_FILE).write_bytes(b"garbage!" * 8)
    with pytest.raises(IndexFolderError, match="unreadable"):
        SearchIndex(tmp_path / "idx")
    with pytest.raises(SbertError, match="empty corpus"):
        build_index(np.zeros((0, 4), np.float32), [], tmp_path / "empty", "flat", "m", "d")


def test_community_detection_and_clusterers_find_planted_groups():
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((3, 32))
    points = np.concatenate([c + 0.05 * rng.standard_normal((12, 32)) for c in centres]).astype(np.float32)
    groups = community_detection(points, threshold=0.9, min_size=5)
    assert sorted(sorted(g) for g in groups) == [list(range(i, i + 12)) for i in (0, 12, 24)]
    for labels in (kmeans(points, 3), agglomerative(points, clusters=3)):
        assert len({tuple(labels[i : i + 12]) for i in (0, 12, 24)}) == 3
        assert all(len(set(labels[i : i + 12])) == 1 for i in (0, 12, 24))


def test_cli_build_search_and_model_mismatch(tiny_dirs, tmp_path, capsys):
    model_dir, other_dir = tmp_path / "model", tmp_path / "other"
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(model_dir)
    SentenceEncoder.from_transformer(tiny_dirs["roberta"], device="cpu").save(other_dir)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a man is playing a guitar\nthe cat sat on the mat\nit is raining today\n", encoding="utf-8")
    assert main(["index", "build", str(corpus), "--out", str(tmp_path / "idx"), "--model", str(model_dir)]) == 0
    assert not (tmp_path / ".idx.shards").exists()  # the resumable shards go once the index is written
    info = json.loads((tmp_path / "idx" / INFO_FILE).read_text())
    assert info["model_digest"] == model_digest(SentenceEncoder.load(model_dir, device="cpu"))
    capsys.readouterr()
    assert main(["search", str(tmp_path / "idx"), "the cat sat on the mat", "-k", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["hits"][0]["text"] == "the cat sat on the mat" and len(result["hits"]) == 2
    assert main(["search", str(tmp_path / "idx"), "cats", "--model", str(other_dir)]) == 2
    assert "built with model" in capsys.readouterr().err
    assert main(["search", str(tmp_path / "nowhere"), "cats"]) == 2
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    assert main(["index", "build", str(empty), "--out", str(tmp_path / "idx2"), "--model", str(model_dir)]) == 2
    assert "empty corpus" in capsys.readouterr().err


def test_index_embeds_documents_with_the_document_prompt_and_search_queries_with_the_query_prompt(
    tiny_dirs, tmp_path, capsys, caplog
):
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    model.settings.prompts = {"query": "query: ", "document": "passage: "}
    model.save(tmp_path / "model")
    docs = ["a man is playing a guitar", "the cat sat on the mat", "it is raining today"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(docs) + "\n", encoding="utf-8")
    build = ["index", "build", str(corpus), "--out", str(tmp_path / "idx"), "--model", str(tmp_path / "model")]
    assert main(build) == 0
    assert json.loads((tmp_path / "idx" / INFO_FILE).read_text())["document_prompt"] == "passage: "
    capsys.readouterr()
    assert main(["search", str(tmp_path / "idx"), "cats on mats", "-k", "3", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    want = cos_sim(model.encode_query(["cats on mats"]), model.encode_document(docs))[0]
    assert np.allclose([h["score"] for h in hits], sorted(want, reverse=True), atol=1e-5)
    assert [h["id"] for h in hits] == list(np.argsort(-want))
    model.settings.prompts = {"query": "query: ", "document": "doc: "}  # same weights, another document prompt
    model.save(tmp_path / "model")
    with caplog.at_level(logging.WARNING):  # the handler's level too: another test's run may have raised it
        assert main(["search", str(tmp_path / "idx"), "cats", "--json"]) == 0
    warning = [r.getMessage() for r in caplog.records if "prompt" in r.getMessage()]
    assert len(warning) == 1 and "'passage: '" in warning[0] and "'doc: '" in warning[0]


def test_an_index_built_with_weights_held_in_int8_is_searched_with_them(tiny_dirs, tmp_path, capsys):
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(tmp_path / "model")
    docs = ["a man is playing a guitar", "the cat sat on the mat", "it is raining today"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(docs) + "\n", encoding="utf-8")
    build = ["index", "build", str(corpus), "--out", str(tmp_path / "idx"), "--model", str(tmp_path / "model")]
    assert main([*build, "--dtype", "int8"]) == 0
    assert json.loads((tmp_path / "idx" / INFO_FILE).read_text())["dtype"] == "int8"
    capsys.readouterr()
    assert main(["search", str(tmp_path / "idx"), "cats on mats", "-k", "1", "--json"]) == 0  # once "other weights"
    held = SentenceEncoder.load(tmp_path / "model", device="cpu", dtype="int8")
    want = cos_sim(held.encode_query(["cats on mats"]), held.encode_document(docs))[0]
    assert json.loads(capsys.readouterr().out)["hits"][0]["id"] == int(np.argmax(want))
