"""A training loop for the book, with a progress bar and a live plot.

The loop itself is the five lines every chapter teaches::

    with autograd.record():            # remember the operations...
        l = loss_fn(net(X), y)         # ...of the forward pass
    l.backward()                       # gradients for every Parameter
    trainer.step(batch_size)           # one optimizer step, averaged over the batch

Everything else here is bookkeeping: running averages of the loss and the accuracy, a tqdm
progress bar, and a plot that redraws itself in place after every epoch (in a notebook), or one
printed line per epoch (in a terminal). A hybridized net trains through the very same loop: it
shows up on the autograd tape as one cached op.

This module belongs to the book, not to the library: it may import tqdm, matplotlib and
IPython, which ``import straightdope`` never does.
"""
import io
import time

import numpy as np

from .messages import t, use_fonts

__all__ = ['train', 'evaluate_accuracy']


def _np(x):
    return x.asnumpy() if hasattr(x, 'asnumpy') else np.asarray(x)


def evaluate_accuracy(net, data, metric=None):
    """Accuracy of ``net`` on every batch of ``data`` (no autograd, so no training mode).

    ``metric`` defaults to ``Accuracy()``; another metric object can be passed, and its value
    is returned.
    """
    from straightdope.metric import Accuracy
    metric = metric if metric is not None else Accuracy()
    metric.reset()
    for X, y in data:
        metric.update(y, net(X))
    return _first_value(metric)


def _first_value(metric):
    """The value of a metric (the first one for a composite metric), as a Python float."""
    value = metric.get()[1]
    return float(value[0] if isinstance(value, list) else value)


def _in_notebook():
    """True inside a Jupyter kernel (where a figure can be redrawn in place)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == 'ZMQInteractiveShell'


class LivePlot:
    """Loss and accuracy per epoch, redrawn in place in a notebook (like d2l's Animator).

    The figure is a bare ``matplotlib.figure.Figure`` rendered to PNG and shown through an
    IPython display handle: no pyplot state is touched, nothing is displayed twice, and the
    last picture stays in the saved notebook (and so in the built book).
    """

    def __init__(self, epochs, metric_name='accuracy'):
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
        from IPython.display import display, Image
        self._Image = Image
        self._integer_ticks = MaxNLocator
        self.epochs = epochs
        self.metric_name = metric_name
        use_fonts()
        self.fig = Figure(figsize=(6, 3.2), dpi=100)
        self.ax_loss = self.fig.add_subplot(1, 2, 1)
        self.ax_acc = self.fig.add_subplot(1, 2, 2)
        self._handle = display(self._Image(data=self._png()), display_id=True)

    def _png(self):
        buf = io.BytesIO()
        self.fig.savefig(buf, format='png')
        return buf.getvalue()

    def update(self, history):
        epochs = list(range(1, len(history['train_loss']) + 1))
        ax = self.ax_loss
        ax.clear()
        ax.plot(epochs, history['train_loss'], 'o-', label=t('train.train_loss'))
        ax.set(xlabel=t('train.epoch'), ylabel=t('train.loss'), xlim=(0.5, self.epochs + 0.5))
        ax.legend()
        ax = self.ax_acc
        ax.clear()
        metric = _metric_label(self.metric_name)
        ax.plot(epochs, history['train_acc'], 'o-', label=t('train.train_metric', metric=metric))
        if any(v == v for v in history['test_acc']):          # not all NaN (no test data)
            ax.plot(epochs, history['test_acc'], 's--', label=t('train.test_metric', metric=metric))
        ax.set(xlabel=t('train.epoch'), ylabel=metric, xlim=(0.5, self.epochs + 0.5))
        ax.legend()
        for ax in (self.ax_loss, self.ax_acc):
            # Epochs are whole numbers: no ticks at 0.5, 1.5, ...
            ax.xaxis.set_major_locator(self._integer_ticks(integer=True))
        self.fig.tight_layout()
        self._handle.update(self._Image(data=self._png()))


def _metric_label(name):
    """The metric's name on the plot: 'accuracy' is translated, others stay as they are."""
    return t('train.accuracy') if name == 'accuracy' else name


def _epoch_line(h, epochs):
    e = len(h['train_loss'])
    return t('train.epoch_line', e=f"{e:>{len(str(epochs))}}", epochs=epochs,
             loss=h['train_loss'][-1], train=h['train_acc'][-1], test=h['test_acc'][-1],
             seconds=h['epoch_time_s'][-1])


def train(net, train_data, test_data, loss_fn, trainer, epochs, metric=None,
          progress=True, plot=True):
    """Train ``net`` for ``epochs`` passes over ``train_data``; evaluate on ``test_data``.

    Parameters
    ----------
    net : Block or HybridBlock (hybridized or not: the loop is the same)
    train_data, test_data : iterables of ``(X, y)`` batches, e.g. DataLoaders
        ``test_data`` may be None (test accuracy is then NaN).
    loss_fn : a Gluon loss, e.g. ``gluon.loss.SoftmaxCrossEntropyLoss()``
    trainer : ``gluon.Trainer`` over ``net.collect_params()``
    metric : training metric (default ``Accuracy()``), also used on the test set
    progress : show a tqdm progress bar over all batches
    plot : in a notebook, a live plot of loss and accuracy per epoch; in a terminal, one
        printed line per epoch

    Returns
    -------
    dict of plain Python lists, one entry per epoch: ``train_loss`` (mean loss per sample),
    ``train_acc``, ``test_acc`` and ``epoch_time_s`` (wall time of the training pass only,
    without evaluation, so imperative and hybridized runs compare fairly).
    """
    from straightdope import autograd
    from straightdope.metric import Accuracy
    from tqdm.auto import tqdm

    metric = metric if metric is not None else Accuracy()
    metric_name = metric.get()[0]
    metric_name = metric_name[0] if isinstance(metric_name, list) else metric_name
    history = {'train_loss': [], 'train_acc': [], 'test_acc': [], 'epoch_time_s': []}

    notebook = _in_notebook()
    live = LivePlot(epochs, metric_name) if (plot and notebook) else None
    print_lines = (plot or progress) and live is None
    try:
        total = epochs * len(train_data)
    except TypeError:                     # a generator has no length: bar without a total
        total = None
    # leave=True: the finished bar (100%) stays, so a saved notebook or the rendered
    # book shows the final state rather than the 0% of the moment it was displayed.
    bar = tqdm(total=total, disable=not progress, unit='batch', leave=True)

    try:
        for epoch in range(epochs):
            metric.reset()
            loss_sum, n = 0.0, 0
            start = time.perf_counter()
            for X, y in train_data:
                with autograd.record():
                    out = net(X)
                    l = loss_fn(out, y)
                l.backward()
                batch_size = X.shape[0]
                trainer.step(batch_size)
                # Reading the loss forces the computation: it is part of the epoch time.
                loss_sum += float(_np(l).sum())
                n += batch_size
                metric.update(y, out)
                bar.update(1)
                bar.set_postfix(epoch=epoch + 1, loss=f"{loss_sum / n:.4f}", refresh=False)
            elapsed = time.perf_counter() - start

            history['train_loss'].append(loss_sum / max(n, 1))
            history['train_acc'].append(_first_value(metric))
            history['test_acc'].append(
                evaluate_accuracy(net, test_data, metric) if test_data is not None
                else float('nan'))
            history['epoch_time_s'].append(elapsed)

            if live is not None:
                live.update(history)
            elif print_lines:
                bar.write(_epoch_line(history, epochs))
    finally:
        bar.close()
    if live is not None:
        print(_epoch_line(history, epochs))
    return history
