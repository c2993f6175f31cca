"""The character-level language model of chapter 31, trained longer: perplexity per epoch.

    python -m benchmarks.charlm                        # 100,000 characters, hidden 128, 6 epochs
    python -m benchmarks.charlm --chars 12000 --hidden 64 --epochs 4

The text is Python's documentation (`gluon.data.text.python_docs_text()`), its last tenth
held out; truncated BPTT with batch 32 x 35 steps, Adam, the model hybridized. Prints
the training and held-out perplexity (exp of the mean cross-entropy per character) after
each epoch, then a sample written at temperature 0.5.
"""
import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

import straightdope as mx
from straightdope import autograd, gluon, nd
from straightdope.gluon import nn, rnn
from straightdope.gluon.data import text


class CharLM(gluon.HybridBlock):
    """Embedding -> LSTM -> Dense over the vocabulary, states in and out (chapter 31)."""

    def __init__(self, vocab_size, hidden, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.embed = nn.Embedding(vocab_size, 32)
            self.lstm = rnn.LSTM(hidden)
            self.out = nn.Dense(vocab_size, flatten=False)

    def hybrid_forward(self, F, ids, states):
        seq, states = self.lstm(self.embed(ids), states)
        return self.out(seq), states


def perplexity(model, data, batch_size, trainer=None):
    """One pass over `data` (training if a trainer is given): exp(mean loss)."""
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    states, losses = model.lstm.begin_state(batch_size), []
    for x, y in data.bptt_batches(batch_size):
        if x.shape[0] < data.seq_len:
            break
        states = [s.detach() for s in states]
        with autograd.record(train_mode=trainer is not None):
            scores, states = model(nd.array(x), states)
            loss = loss_fn(scores, nd.array(y))
        if trainer is not None:
            loss.backward()
            trainer.step(batch_size)
        losses.append(float(loss.mean().asscalar()))
    return float(np.exp(np.mean(losses)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=100_000)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=35)
    args = parser.parse_args()
    threadpool_limits(1)
    mx.random.seed(0)
    sample = text.python_docs_text()[:args.chars]
    train = text.CharCorpus(sample, seq_len=args.seq)
    held_out = text.CharCorpus(sample, seq_len=args.seq, train=False)
    model = CharLM(len(train.vocab), args.hidden)
    model.initialize(mx.init.Xavier())
    model.hybridize(compile="sync")
    trainer = gluon.Trainer(model.collect_params(), "adam", {"learning_rate": 0.005})
    print(f"{len(train.text):,} training characters, {len(held_out.text):,} held out, "
          f"vocabulary {len(train.vocab)}, hidden {args.hidden}, "
          f"batch {args.batch} x {args.seq} steps")
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        train_ppl = perplexity(model, train, args.batch, trainer)
        held_ppl = perplexity(model, held_out, args.batch)
        print(f"epoch {epoch}: train perplexity {train_ppl:.2f}, held out {held_ppl:.2f} "
              f"({time.perf_counter() - start:.1f} s)", flush=True)
    model.hybridize(active=False)       # writing calls new shapes: no compiling for them

    def predict(ids, states):
        return model(ids, model.lstm.begin_state(1) if states is None else states)
    print(repr(text.generate(predict, train.vocab, "The ", 200, temperature=0.5, seed=1)))


if __name__ == "__main__":
    main()
