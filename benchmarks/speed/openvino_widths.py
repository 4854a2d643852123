"""OpenVINO with and without its snippets (fused attention kernels), by batch width and in a real encode.

    python benchmarks/speed/openvino_widths.py [--backend openvino-int8] [--repeats 5] [--budget 512]

The openvino backends compile their graph twice and run batches up to SHORT_WIDTHS tokens wide
(by backend) on the compile without snippets. This is the measurement behind that choice, on all-MiniLM-L6-v2:

1. By width: one single-threaded stream, batches of --budget tokens (rows = budget // width, all
   tokens real), each compile in turn, median of --repeats x 3 alternated runs. A ratio above 1
   means snippets off is faster.
2. encode() of three text sets, each compile for every batch and the shipped choice by width,
   alternated, median of --repeats: the 2,758 STSb test sentences (STSb Spearman beside each), the
   same joined 4 at a time (about 55 tokens) and 16 at a time (about 220).
3. Memory: resident MB of a fresh process after loading the model and one encode, with one
   compile (SBERT_OPENVINO_SHORT_WIDTH=0) and with the shipped two.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py
from common import alternate, median, pair_spearman, sts_sentences
from sbert import SentenceEncoder
from sbert.backends.openvino_runtime import OpenVinoBackend, compile_graph

WIDTHS = (4, 6, 8, 10, 12, 14, 16, 20, 24, 32, 48, 64, 96, 128, 256, 512)


def width_view(backend: OpenVinoBackend, budget: int, repeats: int) -> None:
    """Milliseconds per batch of each compile, single-threaded, at every width of WIDTHS."""
    compiles = {on: compile_graph(backend.path, backend.precision, 1, snippets=on) for on in (True, False)}
    requests = {on: model.create_infer_request() for on, model in compiles.items()}
    print(f"| width | rows | snippets on, ms | snippets off, ms | on / off | the backend runs |\n|{'---|' * 6}")
    for width in WIDTHS:
        rows = max(1, budget // width)
        feed = {name: np.ones((rows, width), dtype=np.int64) for name in backend.input_names}
        if "token_type_ids" in feed:
            feed["token_type_ids"][:] = 0
        seconds: dict[bool, list[float]] = {True: [], False: []}
        for run in range(2 + 3 * repeats):  # the first two build each shape's kernels
            for on, request in requests.items():
                start = time.perf_counter()
                request.infer(feed)
                if run >= 2:
                    seconds[on].append(time.perf_counter() - start)
        on, off = median(seconds[True]), median(seconds[False])
        picked = "off" if backend.runs_without_snippets(width) else "on"
        print(f"| {width} | {rows} | {1e3 * on:.2f} | {1e3 * off:.2f} | {on / off:.3f} | {picked} |")


def encode_view(model: SentenceEncoder, backend: OpenVinoBackend, repeats: int) -> None:
    """encode() rates with snippets on for every batch, off for every batch, and as shipped."""
    sentences = sts_sentences("test")
    sets = {"STSb test sentences": sentences}
    for group in (4, 16):
        joined = [" ".join(sentences[i : i + group]) for i in range(0, len(sentences), group)]
        sets[f"STSb test, {group} joined"] = joined
    on, off = backend.compiled, backend.short

    def mode(wide: object, short: object, texts: list[str]) -> Callable[[], np.ndarray]:
        def run() -> np.ndarray:
            backend.compiled, backend.short = wide, short  # each thread's requests follow these
            return model.encode(texts, backend=backend.name, show_progress=False)

        return run

    print("\n| texts | snippets on, texts/s | off | shipped (off up to "
          f"{backend.short_width} tokens) | shipped / on |\n|{'---|' * 5}")  # fmt: skip
    for label, texts in sets.items():
        runs = {"on": mode(on, on, texts), "off": mode(off, off, texts), "shipped": mode(on, off, texts)}
        vectors = {name: run() for name, run in runs.items()}
        seconds = alternate(runs, repeats)
        rate = {name: len(texts) / median(seconds[name]) for name in runs}
        cells = []
        for name in runs:
            quality = f" ({pair_spearman(vectors[name]):.2f})" if texts is sentences else ""
            cells.append(f"{rate[name]:,.0f}{quality}")
        print(f"| {label} | {' | '.join(cells)} | {rate['shipped'] / rate['on']:.3f} |")
    backend.compiled, backend.short = on, off


# Run in a fresh process per setting: resident memory after the model is loaded and has encoded.
RSS_PROBE = """
import sys
from sbert import SentenceEncoder
model = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
model.encode(["a short one", "word " * 100], backend=sys.argv[1], show_progress=False)
print(int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) // 1024)
"""


def memory_view(name: str) -> None:
    """Resident MB with one compile and with two, each in a fresh process (Linux: /proc/self/status)."""
    resident = {}
    for label, width in (("one compile (SBERT_OPENVINO_SHORT_WIDTH=0)", "0"), ("two compiles (shipped)", "")):
        env = os.environ | {"SBERT_OPENVINO_SHORT_WIDTH": width}
        probe = [sys.executable, "-c", RSS_PROBE, name]
        done = subprocess.run(probe, env=env, capture_output=True, text=True, check=True)
        resident[label] = int(done.stdout.split()[-1])
    print("\n| compiles | resident MB after load + one encode |\n|---|---|")
    for label, mb in resident.items():
        print(f"| {label} | {mb:,} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="openvino-int8", choices=["openvino", "openvino-int8"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget", type=int, default=512, help="tokens per batch in the width view")
    args = parser.parse_args()
    model = SentenceEncoder.load("all-MiniLM-L6-v2", device="cpu")
    backend = model.backend(args.backend)
    assert isinstance(backend, OpenVinoBackend)
    print(f"{args.backend}, all-MiniLM-L6-v2; snippets off up to {backend.short_width} tokens\n")
    width_view(backend, args.budget, args.repeats)
    encode_view(model, backend, args.repeats)
    memory_view(args.backend)


if __name__ == "__main__":
    main()
