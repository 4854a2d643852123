import pytest

from sbert.vectors.batching import check_sentences, fixed_batches, length_order


def test_length_order_is_longest_first_and_stable():
    assert length_order([3, 5, 3, 1, 5]) == [1, 4, 0, 2, 3]


def test_fixed_batches_cover_every_index_once():
    batches = fixed_batches(list(range(10)), 4)
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


@pytest.mark.parametrize("size", [0, -1])
def test_fixed_batches_reject_non_positive_size(size):
    with pytest.raises(ValueError, match="batch_size"):
        fixed_batches([1], size)


def test_check_sentences_accepts_str_list_and_generator():
    assert check_sentences("a") == (["a"], True)
    assert check_sentences(["a", ""]) == (["a", ""], False)
    assert check_sentences(s for s in ["x", "y"]) == (["x", "y"], False)


@pytest.mark.parametrize("bad,kind", [(None, "NoneType"), (b"x", "bytes"), (3, "int")])
def test_check_sentences_names_index_and_type(bad, kind):
    with pytest.raises(TypeError, match=rf"sentences\[1\] is {kind}"):
        check_sentences(["ok", bad])


@pytest.mark.parametrize("bad", [None, b"bytes", 5, {"a": 1}])
def test_check_sentences_rejects_non_sequences(bad):
    with pytest.raises(TypeError):
        check_sentences(bad)
