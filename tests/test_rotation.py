"""sbert rotate: a PCA rotation appended to a model keeps full-size similarity and puts the most energy first."""

import numpy as np
import pytest

from sbert import SentenceEncoder
from sbert.errors import SbertError
from sbert.training.rotation import energy_share, principal_rotation, rotate
from tests.cli_runner import run_cli
from tests.conftest import SHARED_DATA

STSB_DEV = SHARED_DATA / "stsbenchmark" / "sts-dev.csv"


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """Distinct sentences of the real STSb dev file."""
    rows = [line.split("\t") for line in STSB_DEV.read_text(encoding="utf-8").splitlines()]
    return list(dict.fromkeys(t for cols in rows for t in cols[5:7]))[:400]


def test_rotation_keeps_full_size_similarity_and_front_loads_energy(tiny_dirs, texts, tmp_path):
    from sentence_transformers import SentenceTransformer

    model = SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu")
    rotated, report = rotate(model, texts[:300], ks=(4, 8, 16))
    plain, turned = model.encode(texts[300:]), rotated.encode(texts[300:])  # texts the fit never saw
    # a rotation keeps every dot product (up to float32 rounding of products near 10: relative 1e-6)
    np.testing.assert_allclose(turned @ turned.T, plain @ plain.T, rtol=1e-6, atol=1e-5)
    assert not np.allclose(turned, plain, atol=1e-3)
    for k in (4, 8, 16):  # PCA's leading k directions hold at least as much as any k coordinates
        assert report.energy_after[k] >= report.energy_before[k] - 1e-9
    held_out = energy_share(turned, (4,))[4], energy_share(plain, (4,))[4]
    assert held_out[0] > held_out[1]
    rotated.save(tmp_path / "rotated")
    st = SentenceTransformer(str(tmp_path / "rotated"), device="cpu").encode(texts[300:])
    np.testing.assert_allclose(st, turned, atol=1e-5)  # sentence-transformers runs the same chain
    np.testing.assert_allclose(SentenceEncoder.load(tmp_path / "rotated", device="cpu").encode(texts[300:]), turned,
                               atol=1e-6)  # fmt: skip


def test_the_rotation_is_orthogonal_and_repeatable():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(200, 12)) * np.arange(1, 13)  # the last coordinate has the most energy
    r = principal_rotation(vectors)
    np.testing.assert_allclose(r @ r.T, np.eye(12), atol=1e-5)
    assert np.array_equal(r, principal_rotation(vectors))
    assert abs(r[0, 11]) > 0.9  # the first direction is the heaviest coordinate
    with pytest.raises(SbertError, match="needs at least as many texts"):
        principal_rotation(vectors[:5])


def test_rotate_command(tiny_dirs, tmp_path):
    model_dir = tmp_path / "model"
    SentenceEncoder.from_transformer(tiny_dirs["bert"], device="cpu").save(model_dir)
    out = tmp_path / "rotated"
    result = run_cli("rotate", "--model", str(model_dir), "--data", f"stsb:{STSB_DEV}", "--output", str(out),
                     "--max-texts", "500", "--device", "cpu")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "rotation fitted on 500 texts; energy in the leading dimensions" in result.stderr
    assert type(SentenceEncoder.load(out, device="cpu")[-1]).__name__ == "Dense"
    few = run_cli("rotate", "--model", str(model_dir), "--data", f"stsb:{STSB_DEV}", "--output", str(tmp_path / "x"),
                  "--max-texts", "10")  # fmt: skip
    assert few.returncode != 0 and "needs at least as many texts" in few.stderr and not (tmp_path / "x").exists()
