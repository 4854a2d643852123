"""The peers of benchmarks/speed/decoder_speed.py that run in venvs of their own.

llama.cpp (llama_peer.py) and sentence-transformers' OpenVINO backend (st_openvino_peer.py), each a
script in this folder speaking peer_protocol.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
LLAMA_SCRIPT = HERE / "llama_peer.py"
ST_OPENVINO_SCRIPT = HERE / "st_openvino_peer.py"
ST_OPENVINO = "sentence-transformers openvino"
LLAMA_QUANTS = ("f16", "q8_0", "q4_K_M")


class Peer:
    """One model served by a peer script in its venv (`python`); called like an encode of its texts."""

    def __init__(self, python: str, script: Path, model: Path, texts_file: Path) -> None:
        self.python, self.script, self.model, self.texts_file = python, script, model, texts_file
        args = [python, str(script), "serve", str(model), str(texts_file)]
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.out = texts_file.with_suffix(f".{script.stem}.{model.stem}.npy")
        if self.ask("") != "ready":
            raise SystemExit(f"{script.name} could not load {model}")
        self.seconds: list[float] = []

    def ask(self, line: str) -> str:
        """Send one protocol line (none: only read) and return the peer's answer line."""
        assert self.process.stdin and self.process.stdout
        if line:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def __call__(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of the texts the peer was started with (`texts` is that list); its own seconds kept."""
        self.seconds.append(float(self.ask(f"embed {self.out}")))
        return np.load(self.out)

    def warm(self) -> None:
        """One untimed call on the first 32 texts (the weights paged in, the threads started)."""
        self.ask(f"warm {self.out}")

    def read(self, op: str) -> object:
        """The JSON a peer-specific op writes (llama.cpp: "tokens"; sentence-transformers openvino: "facts")."""
        out = self.out.with_suffix(f".{op}.json")
        self.ask(f"{op} {out}")
        return json.loads(out.read_text())

    def peak_gib(self) -> float:
        """GiB: the resident high-water mark of a fresh peer process that loads the model and embeds once."""
        args = [self.python, str(self.script), "peak", str(self.model), str(self.texts_file)]
        out = subprocess.run(args, capture_output=True, text=True, check=True, cwd=HERE)
        return float(out.stdout.strip().splitlines()[-1])

    def close(self) -> None:
        """End the peer process."""
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait()


def llama_models(python: str, hf_dir: Path, folder: Path) -> dict[str, Path]:
    """The model as f16 GGUF and llama.cpp's q8_0 / q4_K_M of it, by engine name."""
    files = {q: folder / f"model-{q}.gguf" for q in LLAMA_QUANTS}
    run = [python, str(LLAMA_SCRIPT)]
    subprocess.run([*run, "convert", str(hf_dir), str(files["f16"])], check=True, capture_output=True)
    for quant in LLAMA_QUANTS[1:]:
        subprocess.run([*run, "quantize", str(files["f16"]), str(files[quant]), quant], check=True, capture_output=True)
    return {f"llama.cpp {q}": path for q, path in files.items()}


def start_peers(args: object, model: Path, hf_dir: Path, folder: Path, texts_file: Path,
                keep: set[str] | None) -> tuple[dict[str, Peer], dict[str, Path]]:  # fmt: skip
    """The peers asked for (`--llama-python`, `--st-openvino-python`; `keep`: engine names), and the GGUF files."""
    llama, stov = getattr(args, "llama_python", None), getattr(args, "st_openvino_python", None)
    gguf = llama_models(llama, hf_dir, folder) if llama else {}
    gguf = {name: file for name, file in gguf.items() if keep is None or name in keep}
    peers = {name: Peer(str(llama), LLAMA_SCRIPT, file, texts_file) for name, file in gguf.items()}
    if stov and (keep is None or ST_OPENVINO in keep):
        peers[ST_OPENVINO] = Peer(stov, ST_OPENVINO_SCRIPT, model, texts_file)
    return peers, gguf
