#!/usr/bin/env bash
# Wheels that benchmarks/gpu/gpu_train.py needs on the lent GPU machine and that its image lacks:
# sentence-transformers' fit imports `datasets`, which needs dill and multiprocess (pyarrow, pandas,
# xxhash, fsspec and the rest are there). Fills the git-ignored .whl/ (about 1 MB); carry ".whl".
# Usage, from the project root: bash benchmarks/gpu/gpu_wheels.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
ex=$(git rev-parse --git-path info/exclude); mkdir -p "$(dirname "$ex")"
grep -qx '/.whl/' "$ex" 2>/dev/null || echo '/.whl/' >> "$ex"
rm -rf .whl && mkdir .whl
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$p")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d .whl datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
ls .whl
