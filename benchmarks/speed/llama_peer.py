"""llama.cpp as a peer of benchmarks/speed/decoder_speed.py; runs in its own venv (`make bench-decoder` builds it).

    PYTHON_LLAMA benchmarks/speed/llama_peer.py convert HF_DIR OUT.gguf     # f16 GGUF of a Qwen3 folder
    PYTHON_LLAMA benchmarks/speed/llama_peer.py quantize IN.gguf OUT.gguf q8_0|q4_K_M
    PYTHON_LLAMA benchmarks/speed/llama_peer.py serve MODEL.gguf TEXTS.json  # peer_protocol's lines, and tokens OUT
    PYTHON_LLAMA benchmarks/speed/llama_peer.py peak MODEL.gguf TEXTS.json   # prints its VmHWM in GiB

Only llama-cpp-python, gguf, safetensors, numpy and peer_protocol are imported: this file never sees torch or sbert.
The GGUF is written with the `gguf` package rather than llama.cpp's converter, because the converter
recognises a tokenizer by a hash of its output and the stand-in BPE trained here is unknown to it:
the pre-tokenizer is named here ("gpt-2": the byte-level regex the stand-in's ByteLevel pre-tokenizer
uses), and decoder_speed.py compares llama.cpp's token ids with the Hugging Face tokenizer's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import peer_protocol

QUANT_TYPES = {"f16": 1, "q8_0": 7, "q4_K_M": 15}  # llama.cpp's LLAMA_FTYPE_MOSTLY_* values
# Tokens per llama_decode call: llama.cpp embeds every sentence that fits in one batch at once.
BATCH_TOKENS = 256  # measured fastest of 256 / 512 / 2048 on 2 AMD EPYC cores (q8_0: 21.6, 20.6, 15.3 sentences/s)


def convert(hf_dir: Path, out: Path) -> None:
    """Write the Qwen3 model in `hf_dir` (config.json, model.safetensors, tokenizer.json) as an f16 GGUF."""
    import gguf
    from safetensors.numpy import load_file

    config = json.loads((hf_dir / "config.json").read_text())
    layers = int(config["num_hidden_layers"])
    writer = gguf.GGUFWriter(str(out), "qwen3")
    writer.add_name("sbert-benchmark-qwen3")
    writer.add_block_count(layers)
    writer.add_context_length(int(config["max_position_embeddings"]))
    writer.add_embedding_length(int(config["hidden_size"]))
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_head_count(int(config["num_attention_heads"]))
    writer.add_head_count_kv(int(config["num_key_value_heads"]))
    writer.add_key_length(int(config["head_dim"]))
    writer.add_value_length(int(config["head_dim"]))
    # transformers 5 writes rope_theta inside rope_parameters; 4.x at the top level
    writer.add_rope_freq_base(float(config.get("rope_parameters", config).get("rope_theta", 10_000.0)))
    writer.add_layer_norm_rms_eps(float(config["rms_norm_eps"]))
    writer.add_pooling_type(gguf.PoolingType.LAST)
    writer.add_file_type(QUANT_TYPES["f16"])
    _add_vocab(writer, hf_dir / "tokenizer.json", int(config["vocab_size"]))
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN3, layers)
    for name, array in load_file(str(hf_dir / "model.safetensors")).items():
        target = names.get_name("model." + name, try_suffixes=(".weight", ".bias"))
        if target is None:
            raise SystemExit(f"{hf_dir}: tensor {name} has no Qwen3 GGUF name")
        # llama.cpp keeps 1-D tensors (norms) in f32; matrices go to f16 as its converter writes them.
        writer.add_tensor(target, array.astype(np.float16 if array.ndim == 2 else np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _add_vocab(writer: object, tokenizer_json: Path, vocab_size: int) -> None:
    """The byte-level BPE of tokenizer.json, padded to the embedding's rows as llama.cpp's converter pads Qwen."""
    import gguf

    spec = json.loads(tokenizer_json.read_text())
    vocab: dict[str, int] = dict(spec["model"]["vocab"])
    special = {t["content"]: t["id"] for t in spec.get("added_tokens", [])}
    vocab.update(special)
    by_id = {i: t for t, i in vocab.items()}
    tokens = [by_id.get(i, f"[PAD{i}]") for i in range(vocab_size)]
    types = [gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL if i in by_id
             else gguf.TokenType.UNUSED for i, t in enumerate(tokens)]  # fmt: skip
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    eos = special["<|endoftext|>"]
    w = writer  # typed loosely: gguf ships no stubs
    w.add_tokenizer_model("gpt2")  # type: ignore[attr-defined]
    w.add_tokenizer_pre("gpt-2")  # type: ignore[attr-defined]
    w.add_token_list(tokens)  # type: ignore[attr-defined]
    w.add_token_types(types)  # type: ignore[attr-defined]
    w.add_token_merges(merges)  # type: ignore[attr-defined]
    w.add_eos_token_id(eos)  # type: ignore[attr-defined]
    w.add_pad_token_id(eos)  # type: ignore[attr-defined]
    w.add_add_bos_token(False)  # type: ignore[attr-defined]
    w.add_add_eos_token(True)  # type: ignore[attr-defined]  # Qwen3-Embedding appends its EOS


def quantize(source: Path, target: Path, kind: str) -> None:
    """llama.cpp's own quantizer (llama_model_quantize) from the f16 GGUF to `kind`."""
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = QUANT_TYPES[kind]
    params.nthread = 0  # all cores
    status = llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(), params)
    if status != 0:
        raise SystemExit(f"llama_model_quantize {source} -> {kind} failed ({status})")


def _load(model: Path) -> object:
    import os

    from llama_cpp import LLAMA_POOLING_TYPE_LAST, Llama

    threads = len(os.sched_getaffinity(0))
    return Llama(str(model), embedding=True, pooling_type=LLAMA_POOLING_TYPE_LAST, n_ctx=BATCH_TOKENS,
                 n_batch=BATCH_TOKENS, n_ubatch=BATCH_TOKENS, n_threads=threads, n_threads_batch=threads,
                 verbose=False)  # fmt: skip


def serve(model: Path, texts_file: Path) -> None:
    """Answer peer_protocol's lines, and "tokens OUT.json" (llama.cpp's token ids), until stdin ends."""
    llm = _load(model)

    def tokens(_op: str, out: str, texts: list[str]) -> None:
        ids = [llm.tokenize(t.encode(), add_bos=True) for t in texts]  # type: ignore[attr-defined]
        Path(out).write_text(json.dumps(ids))

    peer_protocol.serve(texts_file, lambda texts: llm.embed(texts, normalize=True), tokens)  # type: ignore[attr-defined]


def peak(model: Path, texts_file: Path) -> None:
    """Load, embed the texts once, print the resident high-water mark (GiB) of this process."""
    llm = _load(model)
    peer_protocol.print_peak(texts_file, lambda texts: llm.embed(texts, normalize=True))  # type: ignore[attr-defined]


def main() -> None:
    """Dispatch the sub-commands above."""
    op, *args = sys.argv[1:]
    if op == "convert":
        convert(Path(args[0]), Path(args[1]))
    elif op == "quantize":
        quantize(Path(args[0]), Path(args[1]), args[2])
    elif op == "serve":
        serve(Path(args[0]), Path(args[1]))
    elif op == "peak":
        peak(Path(args[0]), Path(args[1]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
