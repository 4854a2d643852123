#!/usr/bin/env bash
# The install a user gets: `make run`'s venv (torch, then `.[default-model]`, no dev extra) and the
# README's first steps in it, each checked. Usage: .ci/smoke-run-install.sh VENV (created when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${1:-.venv-run}
make run VENV="$VENV" >/dev/null  # the README's first command: builds the venv, then runs the demo
SBERT="$PWD/$VENV/bin/sbert"
PY="$PWD/$VENV/bin/python"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
step() { echo "smoke: $*"; }

step "sbert --help, and --help of every subcommand"
"$SBERT" --help >/dev/null
for command in $("$PY" -c "from sbert.cli.main import build_parser; p = build_parser(); \
print(' '.join(p._subparsers._group_actions[0].choices))"); do
    "$SBERT" "$command" --help >/dev/null
done

step "sbert demo"
"$SBERT" demo > demo.txt  # to a file: a pipe into `grep -q` closes early
grep -q "Most similar pairs" demo.txt

step "sbert encode a text file"
printf 'A man is eating food.\nA man is riding a horse.\nSomeone eats.\n' > sentences.txt
"$SBERT" encode --input sentences.txt --output emb.npy
"$PY" -c "import numpy as np; e = np.load('emb.npy'); assert e.shape == (3, 384), e.shape"

step "sbert train on a CSV (scores 0-5) and on a JSON lines file"
cp "$ROOT/.ci/pairs.csv" pairs.csv  # scored pairs (0-5), shared with smoke-extras.sh
cat > pairs.jsonl <<'JSONL'
{"query": "how do cats sleep", "document": "Cats sleep up to sixteen hours a day."}
{"query": "capital of france", "document": "Paris is the capital of France."}
{"query": "boil an egg", "document": "Put the egg in boiling water for nine minutes."}
JSONL
"$SBERT" train --model all-MiniLM-L6-v2 --objective regression --train 'csv[scale=0-5]:pairs.csv' \
    --output from-csv --epochs 1 --batch-size 2 --no-progress
"$SBERT" train --model all-MiniLM-L6-v2 --objective mnrl --train jsonl:pairs.jsonl \
    --output from-jsonl --epochs 1 --batch-size 3 --no-progress
test ! -e from-csv.run  # no run folder without checkpoints

step "the trained models load (CLI and library)"
"$SBERT" encode --model from-csv --input sentences.txt --output trained.npy
"$PY" -c "import sbert; m = sbert.load('from-jsonl'); assert m.encode(['x']).shape == (1, 384)"

step "commands that need an extra say which, in one line"
one_line_error() {  # one_line_error EXPECTED COMMAND...: exit 2, one stderr line that contains EXPECTED
    local expected=$1; shift
    if "$@" 2>err.txt >/dev/null; then echo "smoke: '$*' should have failed"; exit 1; fi
    if [ "$(wc -l < err.txt)" -ne 1 ] || ! grep -qF "$expected" err.txt; then
        echo "smoke: '$*' printed:"; cat err.txt; exit 1
    fi
}
# An editable install (make's): the hint names this interpreter and the clone, which is what works here.
CLONE=$("$PY" -c "from sbert.install_hint import editable_root; print(editable_root())")
one_line_error "$PY -m pip install -e '$CLONE[serve]'" "$SBERT" serve
one_line_error "$PY -m pip install -e '$CLONE[onnx]'" "$SBERT" encode --input sentences.txt --output o.npy --backend onnx
one_line_error "$PY -m pip install -e '$CLONE[index]'" "$SBERT" index build sentences.txt --out idx
step "all passed"
