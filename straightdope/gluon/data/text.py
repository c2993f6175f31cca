"""Text for character-level language models, offline: Python's own documentation.

`pydoc_data.topics` ships with Python (about 470 KB of English prose: the help
pages of the language reference). `CharCorpus` turns it, or any text, into

* a vocabulary (`Vocab`: one id per character, `encode`/`decode`),
* numbered windows of `seq_len` characters with their next-character targets
  (a `Dataset`, for a `DataLoader`), and
* batches for truncated backpropagation through time (`bptt_batches`): the text
  cut into `batch_size` long rows read side by side, so the state a batch ends with
  is the right start for the next batch.

`generate` samples text from a trained model one character at a time.
"""
from __future__ import annotations

import numpy as np

from .dataset import Dataset


def python_docs_text() -> str:
    """The help topics of Python's documentation as one string (sorted by topic)."""
    from pydoc_data.topics import topics
    return "\n\n".join(topics[key].strip() for key in sorted(topics))


class Vocab:
    """Characters <-> ids. Ids follow the sorted characters, so a text always gets the
    same vocabulary."""

    def __init__(self, text: str):
        self.idx_to_token = sorted(set(text))
        self.token_to_idx = {ch: i for i, ch in enumerate(self.idx_to_token)}

    def __len__(self):
        return len(self.idx_to_token)

    def encode(self, text: str) -> np.ndarray:
        try:
            return np.fromiter((self.token_to_idx[ch] for ch in text), np.int32, len(text))
        except KeyError as err:
            raise KeyError(f"character {err.args[0]!r} is not in the vocabulary of "
                           f"{len(self)} characters") from None

    def decode(self, ids) -> str:
        return "".join(self.idx_to_token[int(i)] for i in np.asarray(ids).reshape(-1))

    def __repr__(self):
        return f"Vocab({len(self)} characters)"


class CharCorpus(Dataset):
    """Windows of `seq_len` character ids and their targets (the same window shifted by
    one character), from `text` (default: Python's documentation).

    The first `1 - valid_fraction` of the text is the training part (`train=True`), the
    rest the validation part; both use the vocabulary of the whole text.

    >>> corpus = CharCorpus(seq_len=35)
    >>> x, y = corpus[0]            # int32 arrays of 35 ids; y[:-1] == x[1:]
    """

    def __init__(self, text: str | None = None, seq_len: int = 35, train: bool = True,
                 valid_fraction: float = 0.1):
        if seq_len < 1:
            raise ValueError(f"CharCorpus: seq_len must be positive, got {seq_len}")
        if not 0 <= valid_fraction < 1:
            raise ValueError(f"CharCorpus: valid_fraction must be in [0, 1), got "
                             f"{valid_fraction}")
        text = python_docs_text() if text is None else text
        self.vocab = Vocab(text)
        cut = int(len(text) * (1 - valid_fraction))
        self.text = text[:cut] if train else text[cut:]
        self.ids = self.vocab.encode(self.text)
        self.seq_len = seq_len
        if len(self.ids) <= seq_len:
            raise ValueError(f"CharCorpus: {len(self.ids)} characters are too few for "
                             f"windows of {seq_len} plus a target")

    def __len__(self):
        return (len(self.ids) - 1) // self.seq_len

    def __getitem__(self, idx):
        if not -len(self) <= idx < len(self):
            raise IndexError(f"window {idx} of {len(self)}")
        start = (idx % len(self)) * self.seq_len
        window = self.ids[start:start + self.seq_len + 1]
        return window[:-1], window[1:]

    def bptt_batches(self, batch_size: int, seq_len: int | None = None):
        """Yield (inputs, targets), each (seq_len, batch_size) int32 in TNC order (time
        first): column j reads its own stretch of the text, batch after batch, so the
        final state of one batch is where the next one continues."""
        seq_len = seq_len or self.seq_len
        return bptt_batches(self.ids, batch_size, seq_len)


def bptt_batches(ids, batch_size: int, seq_len: int):
    """Cut `ids` into `batch_size` rows read side by side; yield (inputs, targets) of
    shape (seq_len, batch_size), targets one step ahead (the last batch may be shorter)."""
    ids = np.asarray(ids)
    rows = (len(ids) - 1) // batch_size
    if rows < 1:
        raise ValueError(f"bptt_batches: {len(ids)} ids are too few for {batch_size} rows")
    data = ids[:rows * batch_size].reshape(batch_size, rows).T
    target = ids[1:rows * batch_size + 1].reshape(batch_size, rows).T
    for start in range(0, rows, seq_len):
        yield (np.ascontiguousarray(data[start:start + seq_len]),
               np.ascontiguousarray(target[start:start + seq_len]))


def generate(predict, vocab: Vocab, prefix: str, length: int, temperature: float = 1.0,
             seed: int | None = None) -> str:
    """Text written by a model, one character at a time after `prefix`.

    `predict(ids, state) -> (scores, state)` runs the model on ids of shape (T, 1) (state
    None at the start) and returns unnormalised scores of shape (T, 1, len(vocab)) (or
    (T, len(vocab))) as NDArrays or NumPy arrays. Lower `temperature` picks likelier
    characters; 0 always picks the likeliest."""
    from ...ndarray import NDArray, array
    rng = np.random.RandomState(seed)
    if not prefix:
        raise ValueError("generate: give a prefix of at least one character")
    scores, state = predict(array(vocab.encode(prefix).reshape(-1, 1), dtype="float32"), None)
    out = list(prefix)
    for _ in range(length):
        last = (scores.asnumpy() if isinstance(scores, NDArray) else np.asarray(scores))
        last = last.reshape(-1, len(vocab))[-1].astype(np.float64)
        if temperature <= 0:
            nxt = int(np.argmax(last))
        else:
            p = np.exp((last - last.max()) / temperature)
            nxt = int(rng.choice(len(vocab), p=p / p.sum()))
        out.append(vocab.idx_to_token[nxt])
        scores, state = predict(array(np.array([[nxt]], np.float32)), state)
    return "".join(out)


__all__ = ["python_docs_text", "Vocab", "CharCorpus", "bptt_batches", "generate"]
