"""`sbert encode-sparse`: texts in, one per line; sparse vectors out as JSON lines for a search engine."""

from __future__ import annotations

import argparse
import itertools
import sys

from sbert.cli.common import stream_lines
from sbert.errors import SbertError
from sbert.formats.layout import atomic_file
from sbert.names import SPARSE_BACKEND_NAMES, SPARSE_EXPORT_FORMATS

_CHUNK = 4096  # lines encoded and written per round: memory stays flat for any input size


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("encode-sparse", help="sparse vectors (SPLADE, CSR) as JSON lines for a search engine",
                       description=__doc__)  # fmt: skip
    p.add_argument("--model", "-m", required=True, help="a SparseEncoder folder (SPLADE, inference-free SPLADE, CSR)")
    p.add_argument("--input", "-i", required=True, help="UTF-8 text file, one text per line ('-' = stdin)")
    p.add_argument("--output", "-o", required=True, help="the .jsonl to write (atomically)")
    p.add_argument("--format", choices=SPARSE_EXPORT_FORMATS, default="qdrant")
    p.add_argument("--task", choices=("query", "document"), default="document", help="which prompt / route")
    p.add_argument("--max-active-dims", type=int, help="keep each vector's k largest weights")
    p.add_argument("--name", default="sparse", help="the named vector (qdrant) or the field (opensearch)")
    p.add_argument("--device", default=None)
    p.add_argument("--backend", choices=SPARSE_BACKEND_NAMES, default="torch",
                   help="torch, or SPLADE as one graph on a runtime (onnx-int8: the fastest on a CPU)")  # fmt: skip
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Stream the input through the model into the output file; one line of counts at the end."""
    from sbert.sparse import SparseEncoder
    from sbert.sparse.export import sparse_records

    if args.max_active_dims is not None and args.max_active_dims <= 0:
        raise SbertError(f"--max-active-dims must be positive, got {args.max_active_dims}")
    model = SparseEncoder.load(args.model, device=args.device)
    tokenizer = model.mlm.tokenizer if model.mlm is not None else None
    token = (lambda j: str(tokenizer.convert_ids_to_tokens(j))) if tokenizer is not None else str
    lines, active = stream_lines(args.input), 0
    written = 0
    with atomic_file(args.output) as out:
        while chunk := list(itertools.islice(lines, _CHUNK)):
            vectors = model.encode(chunk, task=args.task, max_active_dims=args.max_active_dims, backend=args.backend)
            active += int(vectors.nnz)
            for record in sparse_records(vectors, args.format, written, args.name, token):
                out.write(record)
            written += len(chunk)
    mean = active / max(written, 1)
    print(f"{written} vectors ({mean:.1f} active dimensions each) in {args.output}", file=sys.stderr)
    return 0
