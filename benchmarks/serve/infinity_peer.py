"""Infinity beside sbert in serve_cpu.py: its default torch engine, and its ONNX engine on an ONNX copy of the model.

Infinity's ONNX engine (`--engine optimum`) needs an ONNX file in the model folder. It gets one made by
its own venv's exporter (optimum's, as a plain transformers encoder whose output is the token states
its engine pools), beside a copy of the folder's other files. Two settings make it start and serve the
same vectors (infinity-emb 0.0.78 with optimum 2.1):
- it hands an absolute folder's ONNX path to optimum as the file name, which optimum then finds in no
  listing; given the folder as "." (the server started inside it) the name is relative and matches;
- it pools a folder's CLS token unless told `--pooling-method mean` (its torch engine reads the
  folder's own pooling; all-MiniLM-L6-v2's is mean).
Infinity's ONNX graph optimisation fails with this optimum (an OptimizationConfig argument it no longer
takes) and Infinity then says it serves the unoptimised graph; that is its engine as installed.
Every Infinity server is asked for one vector before the rounds, against sbert's offline encode: that
also catches an optimised graph Infinity might find cached for "." from another folder.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import numpy as np
from serve_load import request_once  # the benchmark's own loopback client

# Left out of the copy: the torch weights, and any ONNX or OpenVINO files of the folder's own, which
# Infinity's search for an ONNX file would weigh against the export.
LEFT_OUT = {"model.safetensors", "pytorch_model.bin", "onnx", "openvino"}
PROBE = "A man is playing a guitar."


def onnx_copy(python: str, source: str, dest: Path) -> Path:
    """`dest` holding an ONNX export of the model folder `source` (made by `python`'s optimum) and its other files."""
    if not (dest / "model.onnx").exists():
        cmd = [python, "-m", "optimum.exporters.onnx", "--model", source, "--task", "feature-extraction",
               "--library-name", "transformers", str(dest)]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or not (dest / "model.onnx").exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise SystemExit(f"optimum's ONNX export of {source} failed: {tail[0]}")
    for path in Path(source).iterdir():
        target = dest / path.name
        if path.name not in LEFT_OUT and path.suffix != ".onnx" and not target.exists():
            (shutil.copytree if path.is_dir() else shutil.copy2)(path, target)
    return dest


def start_infinity(python: str, folder: str, port: int, model: str, onnx: bool = False) -> subprocess.Popen[bytes]:
    """Infinity (CPU) serving `folder` under the name `model`: its default torch engine, or its ONNX engine."""
    engine = ["--engine", "optimum", "--pooling-method", "mean"] if onnx else []
    where = ["--model-id", "." if onnx else folder, "--served-model-name", model, "--port", str(port)]
    # The venv's own path, made absolute but not resolved (resolved, it would name the base interpreter).
    cmd = [os.path.abspath(python), "-m", "infinity_emb.cli", "v2", *where, "--device", "cpu", "--url-prefix", "/v1",
           *engine]  # fmt: skip
    process = subprocess.Popen(cmd, cwd=folder if onnx else None, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        if process.poll() is not None:
            raise SystemExit(f"infinity ({'onnx' if onnx else 'torch'} engine) exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as answer:
                if answer.status == 200:
                    return process
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit("infinity did not start")


def served_drift(port: int, model: str, reference: np.ndarray) -> float:
    """Max |difference| between the server's vector for PROBE and `reference` (both at unit length)."""
    status, answer = asyncio.run(request_once(port, json.dumps({"input": [PROBE], "model": model}).encode()))
    if status != 200:
        raise SystemExit(f"the server on port {port} answered {status} to one sentence: {answer[:200]!r}")
    served = np.asarray(json.loads(answer)["data"][0]["embedding"], dtype=np.float64)
    want = reference / np.linalg.norm(reference)
    return float(np.abs(served / np.linalg.norm(served) - want).max())
