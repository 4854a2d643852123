"""`sbert train-csr`: a CSR sparse head (top-k sparse autoencoder) on a frozen dense model, from any training data.

The data specs are the ones `sbert train` reads (csv:, parquet:, hf:, nli:, stsb:, ...): every text
feeds the reconstruction loss, and each example's first two texts make a contrastive pair (for
labelled NLI data, the entailment rows only; for scored pairs, rows scored at least 0.5 of the scale).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from sbert.cli.common import add_model_args, load_model
from sbert.errors import SbertError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("train-csr", help="train a CSR sparse head on a dense model (sparse vectors for retrieval)",
                       description=__doc__)  # fmt: skip
    p.add_argument("--train", action="append", required=True, help="FORMAT:PATH, as `sbert train` reads (repeatable)")
    p.add_argument("--output", "-o", required=True, help="folder for the CSR SparseEncoder (written atomically)")
    p.add_argument("--k", type=int, default=32, help="active dimensions per vector (32)")
    p.add_argument("--hidden", type=int, default=1536, help="code width (1536: 4x a 384-wide model)")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--lr", type=float, default=4e-4)
    p.add_argument("--seed", type=int, default=0)
    add_model_args(p)
    p.set_defaults(run=run)


def training_texts(specs: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Distinct texts of every set, and its positive pairs."""
    from sbert.data import load_dataset

    texts: dict[str, None] = {}
    pairs: list[tuple[str, str]] = []
    for spec in specs:
        data = load_dataset(spec)
        keep = _positives(data)
        for i, example in enumerate(data.texts):
            texts.update(dict.fromkeys(example))
            if len(example) >= 2 and keep(i):
                pairs.append((example[0], example[1]))
    if not pairs:
        raise SbertError(f"--train {' '.join(specs)}: no positive pairs for the contrastive loss")
    return list(texts), pairs


def _positives(data: object) -> Callable[[int], bool]:
    labels, names, kind = getattr(data, "labels", None), getattr(data, "label_names", None), getattr(data, "kind", "")
    if labels is not None and names and "entailment" in names:
        entail = names.index("entailment")
        return lambda i: int(labels[i]) == entail
    if labels is not None and kind == "pair-score":
        return lambda i: labels[i] >= 0.5
    return lambda i: True


def run(args: argparse.Namespace) -> int:
    """Read the data, train, save; one line of what was trained."""
    from sbert.sparse.csr_train import CsrSettings, train_csr

    texts, pairs = training_texts(args.train)
    dense = load_model(args)
    settings = CsrSettings(hidden_dim=args.hidden, k=args.k, epochs=args.epochs, lr=args.lr, seed=args.seed)
    model = train_csr(dense, texts, pairs, settings)
    model.save(args.output)
    print(f"CSR k={args.k} of {args.hidden} trained on {len(texts)} texts and {len(pairs)} pairs; {args.output}",
          file=sys.stderr)  # fmt: skip
    return 0
