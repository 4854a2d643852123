"""A VLM embedder (a chat-template image-text-to-text model; LLaVA here, whose processor needs no torchvision):
texts, images, {"text", "image"} inputs and chats through its chat template, the query prompt as a system
message, last-token pooling, as sentence-transformers 6.3 encodes them, both ways through the folder."""

from __future__ import annotations

import numpy as np
import pytest

import sbert
from tests.multimodal_fixtures import st_reference, st_vlm_embedder, tiny_llava

st = pytest.importorskip("sentence_transformers")
Image = pytest.importorskip("PIL.Image")


def reference(folder):
    return st_reference(folder)


def pictures() -> list:
    rng = np.random.default_rng(8)
    return [Image.fromarray((rng.random((30 + 10 * i, 40, 3)) * 255).astype("uint8")) for i in range(2)]


def inputs() -> dict[str, list]:
    chat = [{"role": "user", "content": [{"type": "text", "text": "what is in the picture?"}]}]
    return {
        "text": ["a red car", "two dogs play in the park"],
        "image": pictures(),
        "image+text": [{"text": "a red car", "image": p} for p in pictures()],
        "chat": [chat, [{"role": "user", "content": "hello there"}]],
    }


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    base = tmp_path_factory.mktemp("vlm")
    return st_vlm_embedder(tiny_llava(base), base / "st")


def test_every_input_shape_and_the_query_prompt_give_the_references_vectors(folder):
    want, ours = reference(folder), sbert.load(str(folder))
    for kind, batch in inputs().items():
        np.testing.assert_allclose(ours.encode(batch), want.encode(batch), atol=1e-5, err_msg=kind)
    for kind in ("text", "image"):
        np.testing.assert_allclose(ours.encode_query(inputs()[kind]), want.encode_query(inputs()[kind]), atol=1e-5,
                                   err_msg=f"{kind} query")  # fmt: skip


def test_the_folder_sbert_saves_loads_in_sentence_transformers(folder, tmp_path):
    sbert.load(str(folder)).save(str(tmp_path / "again"))
    want, again = reference(folder), reference(tmp_path / "again")
    for kind, batch in inputs().items():
        np.testing.assert_allclose(again.encode(batch), want.encode(batch), atol=1e-5, err_msg=kind)


def test_a_plain_vlm_folder_loads_as_6_3_loads_it(tmp_path):
    plain = tiny_llava(tmp_path)  # no modules.json: the chat Transformer and mean pooling, as 6.3 builds them
    want, ours = reference(plain), sbert.load(str(plain))
    for kind, batch in inputs().items():
        np.testing.assert_allclose(ours.encode(batch), want.encode(batch), atol=1e-5, err_msg=kind)


def test_the_server_embeds_texts_and_queries_as_the_library_does(folder):
    import httpx

    from tests.serve_helpers import serve_in_thread

    server = serve_in_thread("--model", folder)
    try:
        ours = sbert.load(str(folder))
        model = httpx.get(f"{server.url}/v1/models", timeout=60).json()["data"][0]["id"]
        for input_type, want in ((None, ours.encode(inputs()["text"])), ("query", ours.encode_query(inputs()["text"]))):
            body = {"model": model, "input": inputs()["text"]} | ({"input_type": input_type} if input_type else {})
            answer = httpx.post(f"{server.url}/v1/embeddings", json=body, timeout=60)
            assert answer.status_code == 200, answer.text
            np.testing.assert_allclose([d["embedding"] for d in answer.json()["data"]], want, atol=1e-5,
                                       err_msg=str(input_type))  # fmt: skip
    finally:
        assert server.stop()
