"""sentence-transformers' OpenVINO backend as a peer of benchmarks/speed/decoder_speed.py, in its own venv.

    PYTHON_STOV benchmarks/speed/st_openvino_peer.py serve MODEL_DIR TEXTS.json  # peer_protocol's lines, and facts OUT
    PYTHON_STOV benchmarks/speed/st_openvino_peer.py peak MODEL_DIR TEXTS.json   # prints its VmHWM in GiB

`SentenceTransformer(MODEL_DIR, backend="openvino")` as a user calls it: optimum-intel exports the
model folder to OpenVINO IR on load (nothing is saved; the export is part of the peak) and runs it
with its own defaults; sentence-transformers pools and normalizes. `make bench-decoder` builds the
venv: sentence-transformers[openvino] pins transformers < 5.6 and pulls torchvision, so it cannot
share sbert's. Only sentence-transformers, optimum-intel, numpy and peer_protocol are imported.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import peer_protocol

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _load(model_dir: Path) -> Any:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir), device="cpu", backend="openvino")


def _embed(model: Any) -> peer_protocol.Embed:
    return lambda texts: np.asarray(model.encode(texts, show_progress_bar=False, normalize_embeddings=True))


def facts(model: Any) -> dict[str, str]:
    """What OpenVINO compiled the model for: its inference precision and stream count, as the plugin reports."""
    compiled = model[0].auto_model.request  # optimum-intel's compiled model
    compiled = getattr(compiled, "get_compiled_model", lambda: compiled)()
    import openvino

    keys = ("INFERENCE_PRECISION_HINT", "NUM_STREAMS", "INFERENCE_NUM_THREADS", "PERFORMANCE_HINT")
    values = {key: compiled.get_property(key) for key in keys}
    # an element type prints as "<Type: 'bfloat16'>"; its own name is "bf16"
    named = {key: getattr(value, "get_type_name", value.__str__)() for key, value in values.items()}
    return {"openvino": openvino.__version__, **named}


def main() -> None:
    """Dispatch serve / peak."""
    op, model_dir, texts_file = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    model = _load(model_dir)
    if op == "peak":
        peer_protocol.print_peak(texts_file, _embed(model))
    elif op == "serve":

        def facts_op(_op: str, out: str, _texts: list[str]) -> None:
            Path(out).write_text(json.dumps(facts(model)))

        peer_protocol.serve(texts_file, _embed(model), facts_op)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
