"""Helpers the subcommands share: model flags, reading text files, atomic output."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sbert.errors import SbertError
from sbert.formats.aliases import DEFAULT_MODEL
from sbert.formats.layout import atomic_file

if TYPE_CHECKING:
    from sbert.dense.model import SentenceEncoder
    from sbert.m3 import M3Encoder
    from sbert.static import StaticEncoder


def add_model_args(parser: argparse.ArgumentParser) -> None:
    """--model, --device and --max-seq-length, the same for every subcommand that encodes."""
    parser.add_argument("--model", "-m", default=DEFAULT_MODEL, help=f"alias, local dir or Hub id ({DEFAULT_MODEL})")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda if present)")
    parser.add_argument("--max-seq-length", type=int, default=None, help="token limit per input")
    parser.add_argument("--trust-remote-code", action="store_true", help="allow custom model code from the Hub")


def add_dtype_arg(parser: argparse.ArgumentParser) -> None:
    """--dtype: the dtype the weights are held in, for the commands that only run the model."""
    parser.add_argument("--dtype", choices=("fp32", "bf16", "fp16", "int8", "auto"), default=None,
                        help="weights in memory: fp32 (default), bf16/fp16, auto (as stored), or int8 (the "
                             "Transformer's Linears in int8, CPU inference: half the fp32 memory)")  # fmt: skip


def load_model(args: argparse.Namespace, root: Path | None = None) -> SentenceEncoder:
    """Load the model the flags name (imported lazily so `sbert --help` stays fast).

    `root`: the folder --model resolved to, where the caller already resolved it.
    """
    from sbert.dense.model import SentenceEncoder

    source = root if root is not None else args.model
    dtype = getattr(args, "dtype", None)
    model = SentenceEncoder.load(source, device=args.device, trust_remote_code=args.trust_remote_code, dtype=dtype)
    # Commands that load this way only run the model: a LoRA adapter is folded into the weights once, so every
    # backend (ONNX, OpenVINO, CUDA packing) and the server run a plain model at full speed.
    model.merge_adapter()
    if args.max_seq_length is not None:
        try:
            model.max_seq_length = args.max_seq_length
        except ValueError as e:
            raise SbertError(f"--max-seq-length: {e}") from None
    return model


def load_encoder(args: argparse.Namespace, root: Path | None = None) -> SentenceEncoder | StaticEncoder:
    """`load_model`, or a StaticEncoder when --model is a static-embedding folder (`sbert distill --static`).

    The kind is decided by `sbert.model_kind.kind_of`; a sparse model or a cross-encoder gets its
    one-line error from the dense loader. `root`: --model already resolved (an alias or Hub id is
    resolved once).
    """
    from sbert.formats.model_dirs import resolve_model_dir
    from sbert.model_kind import kind_of
    from sbert.static import StaticEncoder

    root = root if root is not None else resolve_model_dir(args.model)
    kind = kind_of(root)
    if kind == "m3":  # its dense output (CLS, unit length), not the mean pooling a bare encoder folder gets
        from sbert.m3.views import dense_view

        return dense_view(load_m3(root, args.device, getattr(args, "dtype", None), args.max_seq_length))
    if kind != "static":
        return load_model(args, root)
    if args.max_seq_length is not None:
        raise SbertError("--max-seq-length: a static model has no token limit")
    if args.device not in (None, "cpu"):
        raise SbertError(f"--device {args.device}: a static model runs on the CPU (numpy)")
    return StaticEncoder.load(root)


def load_m3(root: Path, device: str | None, dtype: str | None = None, max_length: int | None = None) -> M3Encoder:
    """BGE-M3 from folder `root` for the commands (--device, --dtype, --max-seq-length); it is held in fp32."""
    from sbert.m3 import M3Encoder

    if dtype not in (None, "fp32"):
        raise SbertError(f"--dtype {dtype}: a BGE-M3 folder is held in fp32 (--precision computes in bf16 or fp16)")
    return M3Encoder.load(root, device=device, max_length=max_length)


def read_lines(source: str) -> list[str]:
    """Lines of a UTF-8 file (or stdin for '-'); line i of the file is item i (blank lines kept)."""
    return list(stream_lines(source))


def stream_lines(source: str) -> Iterator[str]:
    """The same lines, read lazily (for corpora larger than memory)."""
    from sbert.data.common import iter_lines
    from sbert.data.common import read_lines as file_lines

    rows = iter_lines(sys.stdin.buffer, "<stdin>") if source == "-" else file_lines(Path(source))
    return (line for _, line in rows)


def add_backend_args(parser: argparse.ArgumentParser) -> None:
    """--backend and --batch-tokens, shared by every subcommand that embeds many sentences."""
    from sbert.names import BACKEND_NAMES

    parser.add_argument(
        "--backend", choices=list(BACKEND_NAMES), default="torch", help="inference engine (default torch)"
    )
    parser.add_argument(
        "--batch-tokens", type=int, default=None, help="tokens per batch (default: the backend's; 512 on CPU)"
    )
    add_precision_arg(parser)


def add_precision_arg(parser: argparse.ArgumentParser) -> None:
    """--precision: the dtype the torch backend casts its weights to."""
    from sbert.names import PRECISIONS

    parser.add_argument(
        "--precision", choices=PRECISIONS, default="auto", help="torch weights: auto (bf16/fp16 on CUDA, fp32 on CPU)"
    )


def check_output(path: str) -> None:
    """Fail before any work when the output's folder is missing or the path is a folder."""
    target = Path(path)
    if not target.parent.is_dir():
        raise SbertError(f"{path}: folder {target.parent} does not exist")
    if target.is_dir():
        raise SbertError(f"{path}: is a directory, expected a file path")


def save_npy(path: str, array: np.ndarray) -> None:
    """Write a .npy file atomically: a temp file in the same folder, then rename."""
    check_output(path)
    with atomic_file(path) as f:
        np.save(f, array)
