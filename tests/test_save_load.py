"""Loading rules, the saved layout, atomic saves and safe weight loading."""

import json
import logging
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from sbert import SentenceEncoder
from sbert.errors import ModelFormatError, ModelNotFoundError
from sbert.modules import Normalize, Pooling, Transformer
from tests.tiny_models import CORPUS, build_bert


def test_round_trip_keeps_embeddings_and_chain(tiny_dir, tmp_path):
    model = SentenceEncoder.from_transformer(tiny_dir, pooling="max", normalize=True, max_seq_length=32)
    model.save(tmp_path / "out")
    again = SentenceEncoder.load(tmp_path / "out")
    assert [type(m) for m in again] == [Transformer, Pooling, Normalize]
    assert again.max_seq_length == 32 and again[1].modes == ["max"]
    np.testing.assert_allclose(again.encode(CORPUS), model.encode(CORPUS), atol=1e-6)


def test_saved_layout_is_sentence_transformers(tiny_dirs, tmp_path):
    SentenceEncoder.from_transformer(tiny_dirs["bert"], normalize=True).save(tmp_path / "m")
    root = tmp_path / "m"
    modules = json.loads((root / "modules.json").read_text())
    assert [m["path"] for m in modules] == ["", "1_Pooling", "2_Normalize"]
    assert modules[1]["type"] == "sentence_transformers.models.Pooling"
    for name in ("config.json", "model.safetensors", "sentence_bert_config.json", "config_sentence_transformers.json"):
        assert (root / name).is_file(), name
    assert json.loads((root / "1_Pooling/config.json").read_text())["pooling_mode_mean_tokens"] is True


def test_plain_encoder_dir_gets_mean_pooling_with_a_log_line(tiny_dirs, caplog):
    with caplog.at_level(logging.WARNING, logger="sbert.dense.loading"):
        model = SentenceEncoder.load(tiny_dirs["bert"])
    assert "no modules.json" in caplog.text
    assert [type(m) for m in model] == [Transformer, Pooling] and model[1].modes == ["mean"]


def test_unknown_name_says_what_was_tried(tmp_path):
    with pytest.raises(ModelNotFoundError) as err:
        SentenceEncoder.load("no-such-model-xyz")
    message = str(err.value)
    assert "local directory" in message and "Hugging Face Hub id no-such-model-xyz" in message
    assert "\n" not in message


def test_default_alias_resolves_to_the_installed_package():
    from sbert.formats.model_dirs import resolve_model_dir

    root = resolve_model_dir("all-MiniLM-L6-v2")
    assert (root / "modules.json").is_file()


def test_directory_without_model_files(tmp_path):
    with pytest.raises(ModelFormatError, match=r"neither modules\.json nor"):
        SentenceEncoder.load(tmp_path)


def test_malformed_modules_json_names_file_and_line(tiny_dirs, tmp_path):
    SentenceEncoder.from_transformer(tiny_dirs["bert"]).save(tmp_path / "m")
    (tmp_path / "m/modules.json").write_text('[\n  {"idx": 0,\n  oops\n]')
    with pytest.raises(ModelFormatError, match=r"modules.json:3: invalid JSON"):
        SentenceEncoder.load(tmp_path / "m")


def test_unknown_module_type_lists_known(tiny_dirs, tmp_path):
    SentenceEncoder.from_transformer(tiny_dirs["bert"]).save(tmp_path / "m")
    path = tmp_path / "m/modules.json"
    rows = json.loads(path.read_text())
    rows[1]["type"] = "somewhere.Mystery"
    path.write_text(json.dumps(rows))
    with pytest.raises(ModelFormatError, match=r"unsupported module type .somewhere\.Mystery.; known: Transformer"):
        SentenceEncoder.load(tmp_path / "m")


def test_failed_save_keeps_the_previous_model(tiny_dirs, tmp_path, monkeypatch):
    target = tmp_path / "m"
    model = SentenceEncoder.from_transformer(tiny_dirs["bert"])
    model.save(target)
    before = SentenceEncoder.load(target).encode(CORPUS)

    def crash(self, path):
        path.mkdir(parents=True, exist_ok=True)
        (path / "partial").write_text("half written")
        raise RuntimeError("disk full")

    monkeypatch.setattr(Pooling, "save", crash)
    with pytest.raises(RuntimeError, match="disk full"):
        SentenceEncoder.from_transformer(tiny_dirs["bert"], pooling="max").save(target)
    monkeypatch.undo()
    np.testing.assert_allclose(SentenceEncoder.load(target).encode(CORPUS), before)
    assert [p.name for p in tmp_path.iterdir()] == ["m"]  # no temp folders left behind


class _Payload:
    """Unpickling this calls Path.touch: proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_pickle_checkpoint_with_code_is_refused(tmp_path):
    root = build_bert(tmp_path / "evil")
    (root / "model.safetensors").unlink()
    marker = tmp_path / "code-ran"
    (root / "pytorch_model.bin").write_bytes(pickle.dumps({"w": _Payload(marker)}))
    with pytest.raises(ModelFormatError, match="refused the pickle checkpoint"):
        SentenceEncoder.load(root)
    assert not marker.exists()


def test_plain_tensor_pickle_checkpoint_still_loads(tmp_path):
    import torch
    from safetensors.torch import load_file

    root = build_bert(tmp_path / "legacy")
    reference = SentenceEncoder.load(root).encode(CORPUS)
    state = load_file(str(root / "model.safetensors"))
    (root / "model.safetensors").unlink()
    torch.save(state, root / "pytorch_model.bin")
    np.testing.assert_allclose(SentenceEncoder.load(root).encode(CORPUS), reference, atol=1e-6)


def test_remote_code_is_not_run_unless_trusted(tmp_path):
    root = build_bert(tmp_path / "remote")
    marker = tmp_path / "imported"
    (root / "modeling_evil.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).touch()\n")
    config = json.loads((root / "config.json").read_text())
    config["auto_map"] = {"AutoConfig": "modeling_evil.EvilConfig", "AutoModel": "modeling_evil.EvilModel"}
    (root / "config.json").write_text(json.dumps(config))
    # Untrusted, the config's auto_map is ignored: the built-in BERT class loads and no file is imported.
    model = SentenceEncoder.load(root)
    assert type(model.transformer.auto_model).__name__ == "BertModel"
    assert not marker.exists()


def test_weights_stored_in_fp16_load_as_fp32(tmp_path):
    # transformers 5 loads the dtype a model was saved in by default; sbert asks for fp32 unless told otherwise.
    reference = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu").half().save(tmp_path / "half")
    model = SentenceEncoder.load(tmp_path / "half", device="cpu")
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert np.abs(model.encode(CORPUS) - reference.encode(CORPUS)).max() <= 1e-3
    kept = SentenceEncoder.load(tmp_path / "half", device="cpu", dtype="auto")
    assert next(kept.transformer.auto_model.parameters()).dtype == torch.float16
    with pytest.raises(ValueError, match="dtype must be"):
        SentenceEncoder.load(tmp_path / "half", device="cpu", dtype="fp8")
