"""Sequence data: the character corpus of `gluon.data.text` and the digits read row by
row (`DigitRows`), as chapter 31 uses them."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.datasets import load_digits

from straightdope import nd
from straightdope.gluon import rnn
from straightdope.gluon.data import DataLoader, DigitRows, text

SAMPLE = "the cat sat on the mat. the end."


# ---------------------------------------------------------------- vocabulary

def test_the_vocabulary_numbers_the_distinct_characters_in_sorted_order():
    vocab = text.Vocab(SAMPLE)
    assert vocab.idx_to_token == sorted(set(SAMPLE))
    assert len(vocab) == len(set(SAMPLE))
    assert vocab.idx_to_token[0] == " "
    assert vocab.token_to_idx["t"] == vocab.idx_to_token.index("t")
    # The same text, in any order, gets the same numbers.
    assert text.Vocab(SAMPLE[::-1]).idx_to_token == vocab.idx_to_token


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=1, max_size=60))
def test_encoding_then_decoding_gives_the_text_back(sample):
    vocab = text.Vocab(sample)
    ids = vocab.encode(sample)
    assert ids.dtype == np.int32 and ids.shape == (len(sample),)
    assert ids.min() >= 0 and ids.max() < len(vocab)
    assert vocab.decode(ids) == sample
    assert vocab.decode(ids.reshape(1, -1)) == sample      # any shape, read in order


def test_encoding_a_character_outside_the_vocabulary_names_it():
    with pytest.raises(KeyError, match=r"character 'z' is not in the vocabulary of 3"):
        text.Vocab("abc").encode("abz")


def test_the_python_docs_are_hundreds_of_kilobytes_of_english_prose():
    docs = text.python_docs_text()
    assert len(docs) > 300_000
    assert "assert" in docs and "The " in docs
    assert docs == text.python_docs_text()                 # the same text every time


# ---------------------------------------------------------------- corpus

def test_corpus_windows_are_the_text_with_targets_one_character_ahead():
    corpus = text.CharCorpus(SAMPLE, seq_len=5, valid_fraction=0)
    assert len(corpus) == (len(SAMPLE) - 1) // 5
    x, y = corpus[2]
    assert corpus.vocab.decode(x) == SAMPLE[10:15]
    assert corpus.vocab.decode(y) == SAMPLE[11:16]
    assert corpus.vocab.decode(corpus[-1][0]) == corpus.vocab.decode(corpus[len(corpus) - 1][0])
    with pytest.raises(IndexError, match=f"window {len(corpus)} of {len(corpus)}"):
        corpus[len(corpus)]


def test_corpus_parts_split_the_text_and_share_the_whole_texts_vocabulary():
    sample = "abcdefghij" * 10 + "XYZ" * 4
    train = text.CharCorpus(sample, seq_len=4, valid_fraction=0.1)
    valid = text.CharCorpus(sample, seq_len=4, train=False, valid_fraction=0.1)
    assert train.text + valid.text == sample
    assert len(valid.text) == len(sample) - int(len(sample) * 0.9)
    assert train.vocab.idx_to_token == valid.vocab.idx_to_token == sorted(set(sample))
    assert "X" not in train.text and "X" in train.vocab.token_to_idx


def test_a_corpus_refuses_arguments_it_cannot_use():
    with pytest.raises(ValueError, match="seq_len must be positive, got 0"):
        text.CharCorpus(SAMPLE, seq_len=0)
    with pytest.raises(ValueError, match=r"valid_fraction must be in \[0, 1\), got 1"):
        text.CharCorpus(SAMPLE, valid_fraction=1)
    with pytest.raises(ValueError, match="too few for windows of 50"):
        text.CharCorpus(SAMPLE, seq_len=50)


def test_corpus_windows_batch_in_a_data_loader():
    corpus = text.CharCorpus(SAMPLE, seq_len=4, valid_fraction=0)
    x, y = next(iter(DataLoader(corpus, batch_size=3)))
    assert x.shape == y.shape == (3, 4)
    np.testing.assert_array_equal(x.asnumpy()[:, 1:], y.asnumpy()[:, :-1])


# ---------------------------------------------------------------- BPTT batches

def test_bptt_batches_read_each_column_as_one_stretch_of_the_text():
    ids = np.arange(103)
    batches = list(text.bptt_batches(ids, batch_size=4, seq_len=7))
    rows = (len(ids) - 1) // 4                                  # 25 steps per column
    assert [x.shape for x, _ in batches] == [(7, 4)] * 3 + [(4, 4)]
    inputs = np.concatenate([x for x, _ in batches])
    targets = np.concatenate([y for _, y in batches])
    assert inputs.shape == targets.shape == (rows, 4)
    for column in range(4):
        # Column j continues from batch to batch: ids j*rows, j*rows+1, ...
        np.testing.assert_array_equal(inputs[:, column],
                                      np.arange(column * rows, (column + 1) * rows))
    np.testing.assert_array_equal(targets, inputs + 1)
    assert all(x.flags.c_contiguous and y.flags.c_contiguous for x, y in batches)


def test_corpus_bptt_batches_are_time_major_ids_of_its_text():
    corpus = text.CharCorpus(SAMPLE * 3, seq_len=6, valid_fraction=0)
    x, y = next(corpus.bptt_batches(batch_size=2))
    assert x.shape == y.shape == (6, 2) and x.dtype == np.int32
    assert corpus.vocab.decode(x[:, 0]) == (SAMPLE * 3)[:6]
    assert corpus.vocab.decode(y[:, 0]) == (SAMPLE * 3)[1:7]
    assert [b[0].shape[0] for b in corpus.bptt_batches(2, seq_len=10)][0] == 10


def test_bptt_batches_refuse_fewer_ids_than_rows():
    with pytest.raises(ValueError, match="3 ids are too few for 4 rows"):
        next(text.bptt_batches(np.arange(3), batch_size=4, seq_len=2))


# ---------------------------------------------------------------- generate

class Favourite:
    """A stand-in model that always scores one character highest and counts its calls."""

    def __init__(self, vocab, favourite, margin=50.0):
        self.scores = np.zeros(len(vocab), np.float32)
        self.scores[vocab.token_to_idx[favourite]] = margin
        self.calls = []

    def __call__(self, ids, state):
        self.calls.append((ids.shape, state))
        return nd.array(np.tile(self.scores, (ids.shape[0], 1, 1))), len(self.calls)


def test_generate_feeds_the_prefix_then_one_character_at_a_time_with_the_state():
    vocab = text.Vocab("abc")
    model = Favourite(vocab, "b")
    assert text.generate(model, vocab, "ca", 5, temperature=0) == "ca" + "b" * 5
    assert model.calls[0] == ((2, 1), None)                  # the prefix first, no state
    assert [c[0] for c in model.calls[1:]] == [(1, 1)] * 5
    assert [c[1] for c in model.calls[1:]] == [1, 2, 3, 4, 5]  # each call gets the last state


def test_generate_samples_by_temperature_and_is_reproducible_with_a_seed():
    vocab = text.Vocab("abcd")
    model = Favourite(vocab, "d", margin=2.0)
    cold = text.generate(model, vocab, "a", 400, temperature=0.1, seed=0)
    hot = text.generate(model, vocab, "a", 400, temperature=5.0, seed=0)
    assert cold[1:].count("d") == 400                         # e^(2/0.1): always 'd'
    assert 100 < hot[1:].count("d") < 300 and set(hot[1:]) == set("abcd")
    assert text.generate(model, vocab, "a", 50, temperature=5.0, seed=7) == \
        text.generate(model, vocab, "a", 50, temperature=5.0, seed=7)


def test_generate_accepts_numpy_scores_of_shape_steps_by_vocabulary():
    vocab = text.Vocab("xy")
    ones_for_y = lambda ids, state: (np.array([[0.0, 9.0]] * ids.shape[0]), state)  # noqa: E731
    assert text.generate(ones_for_y, vocab, "xx", 3, temperature=0) == "xxyyy"


def test_generate_needs_a_prefix():
    with pytest.raises(ValueError, match="prefix of at least one character"):
        text.generate(Favourite(text.Vocab("ab"), "a"), text.Vocab("ab"), "", 3)


def test_generate_writes_text_of_the_vocabulary_with_an_lstm():
    vocab = text.Vocab(SAMPLE)
    embed = rnn.LSTM(8, input_size=1)
    embed.initialize()
    out = np.random.RandomState(0).randn(8, len(vocab)).astype(np.float32)

    def predict(ids, states):
        states = embed.begin_state(1) if states is None else states
        seq, states = embed(ids.reshape((0, 0, 1)), states)
        return nd.dot(seq.reshape((-1, 8)), nd.array(out)), states

    written = text.generate(predict, vocab, "the ", 20, temperature=1.0, seed=3)
    assert written.startswith("the ") and len(written) == 24
    assert set(written) <= set(SAMPLE)


# ---------------------------------------------------------------- digit rows

def test_digit_rows_are_the_rows_of_each_digit_scaled_to_zero_one():
    train, test = DigitRows(train=True), DigitRows(train=False)
    assert (len(train), len(test)) == (1347, 450)
    rows, label = train[0]
    assert rows.shape == (8, 8) and rows.dtype == np.float32
    assert 0 <= rows.min() and rows.max() <= 1 and rows.max() > 0.5
    assert label.dtype == np.int32 and 0 <= label <= 9
    # Row t is the t-th row of the scikit-learn image (intensities 0..16).
    digits = load_digits()
    matches = np.flatnonzero(np.all(np.abs(digits.images / 16.0 - rows) < 0.01, axis=(1, 2)))
    assert len(matches) >= 1 and label in digits.target[matches]


def test_digit_rows_split_every_class_into_disjoint_train_and_test_parts():
    train, test = DigitRows(train=True), DigitRows(train=False)
    assert set(np.unique(train.labels)) == set(np.unique(test.labels)) == set(range(10))
    flat = lambda ds: {r.tobytes() for r in ds.data}          # noqa: E731
    assert len(flat(train) & flat(test)) < 10                 # only duplicate drawings
    assert len(DigitRows(train=False, test_fraction=0.1)) in range(175, 185)


def test_digit_rows_batch_as_n_steps_features_for_an_ntc_lstm():
    rows, labels = next(iter(DataLoader(DigitRows(train=False), batch_size=16)))
    assert rows.shape == (16, 8, 8) and labels.shape == (16,)
    layer = rnn.LSTM(5, layout="NTC")
    layer.initialize()
    assert layer(rows).shape == (16, 8, 5)
