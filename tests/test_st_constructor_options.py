"""The reference's constructor keywords sbert takes but has no use for: dropped, warned of, or refused.

The keyword lists are checked against the installed sentence-transformers' own signatures (inspect), so a
keyword it adds or drops in a later release shows here.
"""

from __future__ import annotations

import inspect
import warnings

import pytest

import sbert
from sbert.compat.constructor_options import NOT_APPLIED, OFFLINE_OPTIONS
from sbert.errors import SbertError
from tests.colbert_fixtures import tiny_colbert
from tests.st_training_fixtures import kind_folders

st = pytest.importorskip("sentence_transformers")
CLASSES = ("SentenceTransformer", "CrossEncoder", "SparseEncoder", "MultiVectorEncoder")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("options")
    return {**kind_folders(base), "MultiVectorEncoder": tiny_colbert(base / "colbert")}


def keywords(cls: type) -> set[str]:
    """The named parameters of a class's constructor (self and **kwargs left out)."""
    params = inspect.signature(cls.__init__).parameters.values()
    return {p.name for p in params if p.name != "self" and p.kind is not p.VAR_KEYWORD}


@pytest.mark.parametrize("name", CLASSES)
def test_every_reference_keyword_is_taken_and_no_other(name):
    theirs, ours = keywords(getattr(st, name)), keywords(getattr(sbert, name))
    dropped = OFFLINE_OPTIONS | NOT_APPLIED | ({"modules"} if name == "CrossEncoder" else set())
    assert theirs <= ours | dropped, sorted(theirs - ours - dropped)
    # the dropped lists name only the reference's keywords (a stale name would accept what it refuses)
    reference = set().union(*(keywords(getattr(st, n)) for n in CLASSES))
    assert not (OFFLINE_OPTIONS | NOT_APPLIED) - reference


@pytest.mark.parametrize("name", CLASSES)
def test_loading_options_are_dropped_quietly(folders, name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model = getattr(sbert, name)(str(folders[name]), device="cpu", cache_folder="/nowhere", revision="main",
                                     local_files_only=True, token=None, use_kernels=True)  # fmt: skip
    assert model is not None


@pytest.mark.parametrize("name", CLASSES)
def test_a_misspelt_keyword_is_a_type_error_in_both(folders, name):
    for library in (st, sbert):
        with pytest.raises(TypeError, match="model_kwarg"):
            getattr(library, name)(str(folders[name]), device="cpu", model_kwarg={"dtype": "float32"})


@pytest.mark.parametrize("name", CLASSES)
def test_options_that_would_change_the_model_are_named(folders, name):
    with pytest.warns(UserWarning, match=r"does not apply config_kwargs=\{'hidden_dropout_prob': 0.3\}"):
        getattr(sbert, name)(str(folders[name]), device="cpu", config_kwargs={"hidden_dropout_prob": 0.3})


def test_model_kwargs_dtype_is_read_and_the_rest_named(folders):
    folder = str(folders["SentenceTransformer"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        sbert.SentenceTransformer(folder, device="cpu", model_kwargs={"torch_dtype": "float32"})
    with pytest.warns(UserWarning, match="model_kwargs=.*low_cpu_mem_usage"):
        sbert.SentenceTransformer(folder, device="cpu", model_kwargs={"low_cpu_mem_usage": True})


def test_a_cross_encoder_from_modules_is_refused_not_ignored(folders):
    modules = st.CrossEncoder(str(folders["CrossEncoder"]), device="cpu")._modules.values()
    with pytest.raises(SbertError, match=r"CrossEncoder\(modules=\[\.\.\.\]\) is not built by sbert"):
        sbert.CrossEncoder(str(folders["CrossEncoder"]), modules=list(modules))
