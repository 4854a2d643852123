"""Multi-vector (ColBERT) models: both layouts against sentence-transformers 6, both ways, and the layout rules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sbert.multivector import MultiVectorEncoder
from tests.colbert_fixtures import (
    DOCUMENTS,
    QUERIES,
    build_native,
    build_punctuated_bert,
    build_pylate,
    build_stanford,
)

EXPANSION = {"strategy": "fixed", "attend": False, "length": 16}
# name -> how to build it from the tiny BERT
FOLDERS = {
    "native": lambda b, p: build_native(b, p, query_length=16, document_length=24, query_expansion=EXPANSION),
    "native-min-attend": lambda b, p: build_native(
        b, p, query_length=20, document_length=24, query_expansion={"strategy": "min", "attend": True, "length": 10}
    ),
    "native-plain": lambda b, p: build_native(b, p, prompts={"query": "", "document": ""}, skiplist=[]),
    "pylate": lambda b, p: build_pylate(b, p),
    "pylate-attend": lambda b, p: build_pylate(b, p, attend_to_expansion_tokens=True),
    "pylate-no-expansion": lambda b, p: build_pylate(b, p, do_query_expansion=False),
    "stanford": lambda b, p: build_stanford(b, p),
    "stanford-attend": lambda b, p: build_stanford(b, p, attend_to_mask_tokens=True),
}


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_punctuated_bert(tmp_path_factory.mktemp("colbert") / "bert")


@pytest.fixture(scope="module", params=sorted(FOLDERS))
def folder(request: pytest.FixtureRequest, bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return FOLDERS[request.param](bert, tmp_path_factory.mktemp("mv") / request.param)


def reference_vectors(path: Path) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Query and document token matrices from sentence-transformers 6's MultiVectorEncoder."""
    from sentence_transformers import MultiVectorEncoder as Reference

    ref = Reference(str(path), device="cpu")
    # the reference keeps [UNK] whatever the layout; the unknown-word document is tested apart below
    docs = DOCUMENTS[:-1]
    return [q.numpy() for q in ref.encode_query(QUERIES)], [d.numpy() for d in ref.encode_document(docs)]


def assert_same(ours: list[np.ndarray], ref: list[np.ndarray]) -> None:
    assert [m.shape for m in ours] == [m.shape for m in ref]
    assert max(float(np.abs(a - b).max(initial=0)) for a, b in zip(ours, ref, strict=True)) <= 1e-5


def test_vectors_equal_the_reference(folder: Path) -> None:
    """Same token count after expansion and skiplist, per-token vectors within 1e-5, on both paths."""
    model = MultiVectorEncoder.load(folder, device="cpu")
    ref_q, ref_d = reference_vectors(folder)
    assert_same(model.encode_query(QUERIES), ref_q)
    assert_same(model.encode_document(DOCUMENTS[:-1]), ref_d)


def test_scores_equal_the_reference(folder: Path) -> None:
    from sentence_transformers import MultiVectorEncoder as Reference

    ref = Reference(str(folder), device="cpu")
    expected = ref.similarity(ref.encode_query(QUERIES), ref.encode_document(DOCUMENTS[:-1])).numpy()
    model = MultiVectorEncoder.load(folder, device="cpu")
    got = model.similarity(model.encode_query(QUERIES), model.encode_document(DOCUMENTS[:-1]))
    assert np.abs(got - expected).max() <= 1e-4


def test_save_loads_in_the_reference_with_the_same_vectors(folder: Path, tmp_path: Path) -> None:
    model = MultiVectorEncoder.load(folder, device="cpu")
    model.save(tmp_path / "saved")
    ref_q, ref_d = reference_vectors(tmp_path / "saved")
    assert_same(model.encode_query(QUERIES), ref_q)
    assert_same(model.encode_document(DOCUMENTS[:-1]), ref_d)
    again = MultiVectorEncoder.load(tmp_path / "saved", device="cpu")
    assert_same(again.encode_document(DOCUMENTS), model.encode_document(DOCUMENTS))


def test_pylate_expansion_prefix_rules(bert: Path, tmp_path: Path) -> None:
    """PyLate: [CLS] [Q] text ... padded with [MASK] to query_length, every position scored; [D] after [CLS]."""
    model = MultiVectorEncoder.load(build_pylate(bert, tmp_path / "p"), device="cpu")
    tok = model.transformer.tokenizer
    ids, _ = model._rules.token_ids(model.transformer, ["a man is playing"], "query")
    features = model._rules.pad(model.transformer, ids, "query")
    tokens = tok.convert_ids_to_tokens(features["input_ids"][0])
    assert tokens[0] == "[CLS]" and tokens[1].lower() == "[q] " and tokens[-1] == "[MASK]" and len(tokens) == 16
    assert bool(features["scored_mask"].all())
    assert features["attention_mask"][0].tolist() == [1] * 7 + [0] * 9  # expansion not attended by default
    doc_ids, _ = model._rules.token_ids(model.transformer, ["cats, dogs."], "document")
    assert [t.lower() for t in tok.convert_ids_to_tokens(doc_ids[0])[:2]] == ["[cls]", "[d] "]


def test_skiplist_unknown_words_differ_by_layout(bert: Path, tmp_path: Path) -> None:
    """PyLate maps a skiplist word outside the vocabulary to [UNK] and so drops every [UNK] from documents;
    sentence-transformers leaves such words out of the skiplist and keeps [UNK]."""
    from sentence_transformers import MultiVectorEncoder as Reference

    text = DOCUMENTS[-1]  # "zebra quokka": letters the tiny vocabulary lacks become [UNK]
    pylate = MultiVectorEncoder.load(build_pylate(bert, tmp_path / "p"), device="cpu")
    ids, _ = pylate._rules.token_ids(pylate.transformer, [text], "document")
    n_unk = ids[0].count(pylate.transformer.tokenizer.unk_token_id)
    assert n_unk > 0
    assert len(pylate.encode_document(text)) == len(ids[0]) - n_unk
    native_dir = build_native(bert, tmp_path / "n")
    native = MultiVectorEncoder.load(native_dir, device="cpu")
    kept = native.encode_document(text)
    assert len(kept) == len(Reference(str(native_dir), device="cpu").encode_document([text])[0])
    assert len(kept) >= n_unk


def test_punctuation_is_skipped_in_documents_not_queries(bert: Path, tmp_path: Path) -> None:
    model = MultiVectorEncoder.load(build_native(bert, tmp_path / "n", query_length=16, document_length=24),
                                    device="cpu")  # fmt: skip
    plain = MultiVectorEncoder.load(build_native(bert, tmp_path / "plain", skiplist=[]), device="cpu")
    text = "a man, a plan; a canal: panama!"
    assert len(model.encode_document(text)) == len(plain.encode_document(text)) - 4
    assert len(model.encode_query(text)) == len(plain.encode_query(text))


def test_packed_output_and_single_text(folder: Path) -> None:
    model = MultiVectorEncoder.load(folder, device="cpu")
    mats = model.encode_document(DOCUMENTS)
    packed = model.encode_document(DOCUMENTS, output="packed")
    assert len(packed) == len(DOCUMENTS) and packed.tokens.shape[1] == model.embedding_dimension
    for i, m in enumerate(mats):
        np.testing.assert_array_equal(packed.matrix(i), m)
    np.testing.assert_allclose(model.encode_document(DOCUMENTS[1]), mats[1], atol=1e-5)
    # batching does not change a vector: one text at a time equals the batch
    for i, text in enumerate(DOCUMENTS):
        np.testing.assert_allclose(model.encode_document([text], batch_size=1)[0], mats[i], atol=1e-5)


def test_counted_token_rows_embed_as_encode_embeds_the_texts(folder: Path) -> None:
    # A server counts each request's tokens once (token_rows) and embeds those ids later (encode_token_rows).
    model = MultiVectorEncoder.load(folder, device="cpu")
    for task, texts in (("query", QUERIES), ("document", DOCUMENTS), (None, DOCUMENTS)):
        rows, cut = model.token_rows(texts, task)
        assert model.token_lengths(texts, task) == ([len(row) for row in rows], cut)
        want = model.encode(texts, task=task)
        got = model.encode_token_rows(rows, task)
        assert [m.shape for m in got] == [m.shape for m in want]  # expansion and skiplist applied as in encode
        assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


def test_sbert_load_picks_the_kind_for_both_layouts(bert: Path, tmp_path: Path) -> None:
    import sbert
    from sbert.model_kind import kind_of

    for path in (build_native(bert, tmp_path / "n"), build_pylate(bert, tmp_path / "p"),
                 build_stanford(bert, tmp_path / "s")):  # fmt: skip
        assert kind_of(path) == "multi-vector"
        assert isinstance(sbert.load(path, device="cpu"), sbert.multivector.MultiVectorEncoder)


@pytest.mark.parametrize("backend", ["onnx", "openvino", "onnx-int8", "openvino-int8"])
def test_graph_backends_give_torch_vectors(bert: Path, tmp_path: Path, backend: str) -> None:
    """The exported graph (cached beside the model) on ONNX Runtime / OpenVINO: same token rows as torch."""
    folder = FOLDERS["native"](bert, tmp_path / "m")
    model = MultiVectorEncoder.load(folder, device="cpu")
    for texts, encode in ((QUERIES, model.encode_query), (DOCUMENTS, model.encode_document)):
        want, got = encode(texts), encode(texts, backend=backend)
        assert [m.shape for m in got] == [m.shape for m in want]
        flat_want, flat_got = np.concatenate(want), np.concatenate(got)
        if backend.endswith("int8"):
            assert float((flat_want * flat_got).sum(1).min()) >= 0.98  # unit vectors: the dot is the cosine
        else:
            assert float(np.abs(flat_want - flat_got).max()) <= 1e-4
    assert (folder / "onnx" / "token_embeddings.onnx").is_file()


def test_kind_detection_imports_no_engine(bert: Path, tmp_path: Path) -> None:
    """`kind_of` runs before every CLI load: deciding the kind must not import torch or a graph runtime
    (a run-only install has no onnx; this once crashed `sbert encode` there)."""
    import subprocess
    import sys

    folder = FOLDERS["pylate"](bert, tmp_path / "p")
    code = ("import sys; from pathlib import Path; from sbert.model_kind import kind_of; "
            f"assert kind_of(Path({str(folder)!r})) == 'multi-vector'; "
            "print([m for m in ('torch', 'onnx', 'onnxruntime', 'openvino') if m in sys.modules])")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_taskless_encode_cuts_where_the_reference_does(folder: Path) -> None:
    """encode(texts) with no task: the Transformer's max_seq_length, not document_length (skiplist still applied)."""
    from sentence_transformers import MultiVectorEncoder as Reference

    ref = Reference(str(folder), device="cpu")
    want = [m.numpy() for m in ref.encode(DOCUMENTS[:-1])]
    assert_same(MultiVectorEncoder.load(folder, device="cpu").encode(DOCUMENTS[:-1]), want)
