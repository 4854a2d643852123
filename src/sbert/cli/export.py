"""`sbert export`: write the ONNX graphs (and OpenVINO's blobs) beside the model, check them, report the cost."""

from __future__ import annotations

import argparse
import time

from sbert.cli.common import add_model_args, load_model


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the subcommand."""
    p = sub.add_parser("export", help="export ONNX fp32 and int8 graphs", description=__doc__)
    p.add_argument("--backend", choices=("onnx", "onnx-int8", "openvino", "openvino-int8"), action="append",
                   help="graphs to build (default onnx and onnx-int8)")  # fmt: skip
    p.add_argument("--calibrate", metavar="FILE",
                   help="calibrate the int8 graphs on these sentences (UTF-8, one a line, 300+ advised; "
                        "default: the cached calibration, else the packaged sentences)")  # fmt: skip
    p.add_argument("--check", metavar="TASK", help="score an STS set with each backend, e.g. stsb:PATH")
    add_model_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Export (or reuse the cache), verify against torch, optionally compare Spearman."""
    dataset, sentences = None, None
    if args.calibrate:
        from sbert.backends.calibration import read_file

        sentences = read_file(args.calibrate)  # checked before anything is exported
    if args.check:
        from sbert.data import load_dataset

        dataset = load_dataset(args.check)
        if dataset.kind != "pair-score":
            raise ValueError(f"--check {args.check}: needs scored pairs (stsb:, sick:, sts:), got {dataset.kind}")
    model = load_model(args)
    backends = args.backend or ["onnx", "onnx-int8"]
    if sentences is not None:
        if not any(name.endswith("-int8") for name in backends):
            backends.append("onnx-int8")
        model.calibrate_int8(sentences)
        print(f"int8 calibration: {len(sentences)} sentences from {args.calibrate}")
    for name in backends:
        start = time.perf_counter()
        path = getattr(model.backend(name), "path", None)  # exports on a cold cache, then checks against torch
        print(f"{name}: {path} (ready in {time.perf_counter() - start:.1f} s, checked against torch)")
    if dataset is not None:
        from sbert.evaluation.sts import evaluate_sts

        base = evaluate_sts(model, dataset)["cosine_spearman"]
        print(f"{'torch':>13}: Spearman {base:.2f}")
        for name in backends:
            score = evaluate_sts(model, dataset, backend=name)["cosine_spearman"]
            print(f"{name:>13}: Spearman {score:.2f} (change {score - base:+.2f})")
    return 0
