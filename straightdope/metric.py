"""Evaluation metrics: running averages over batches.

A metric accumulates two numbers, ``sum_metric`` and ``num_inst``, and reports their ratio.
Call ``update(labels, preds)`` once per batch, ``get()`` whenever you want the value so far,
and ``reset()`` at the start of each epoch::

    acc = Accuracy()
    for X, y in loader:
        acc.update(y, net(X))
    name, value = acc.get()        # ('accuracy', 0.97)

``labels`` and ``preds`` are NDArrays or NumPy arrays, or lists of them (one per output of a
network with several outputs). Everything is computed in NumPy on the host; metrics are not
part of the graph and never recorded by autograd.
"""
import numpy as np

__all__ = ['EvalMetric', 'CompositeEvalMetric', 'Accuracy', 'TopKAccuracy', 'Loss', 'MSE',
           'MAE', 'RMSE', 'CrossEntropy', 'CustomMetric', 'create', 'register']


def _to_numpy(x):
    return x.asnumpy() if hasattr(x, 'asnumpy') else np.asarray(x)


def _as_list(x):
    """A single array means "one output"; a list or tuple means one array per output."""
    if isinstance(x, (list, tuple)):
        return [_to_numpy(a) for a in x]
    return [_to_numpy(x)]


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raise a clear error when labels and predictions do not line up.

    Compares the number of arrays (default) or, with ``shape=True``, the arrays' shapes.
    With ``wrap=True`` single arrays are wrapped into lists and returned.
    """
    if shape:
        if labels.shape != preds.shape:
            raise ValueError(f"Shape of labels {labels.shape} does not match shape of "
                             f"predictions {preds.shape}")
        return labels, preds
    if wrap:
        labels, preds = _as_list(labels), _as_list(preds)
    if len(labels) != len(preds):
        raise ValueError(f"Got {len(labels)} label array(s) but {len(preds)} prediction "
                         f"array(s); pass one label per network output")
    return labels, preds


class EvalMetric:
    """Base class: subclasses implement ``update`` by adding to ``sum_metric``/``num_inst``.

    The ``global_*`` counters survive ``reset_local()`` (e.g. per-epoch vs whole-run values).
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return "EvalMetric: {}".format(dict(self.get_name_value()))

    def update(self, labels, preds):
        raise NotImplementedError(f"{type(self).__name__} must implement update()")

    def update_dict(self, label, pred):
        """Update from dicts name -> array, picking ``label_names``/``output_names``."""
        preds = [pred[n] for n in self.output_names] if self.output_names else list(pred.values())
        labels = [label[n] for n in self.label_names] if self.label_names \
            else list(label.values())
        self.update(labels, preds)

    def _add(self, value, count):
        """Accumulate into both the local and the global counters."""
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def reset(self):
        """Forget everything seen so far (call at the start of each epoch)."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Reset the local counters only; ``get_global()`` keeps counting."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        """``(name, value)``; value is NaN before the first update."""
        if self.num_inst == 0:
            return self.name, float('nan')
        return self.name, float(self.sum_metric / self.num_inst)

    def get_global(self):
        if self.global_num_inst == 0:
            return self.name, float('nan')
        return self.name, float(self.global_sum_metric / self.global_num_inst)

    def get_name_value(self):
        """A list of ``(name, value)`` pairs (several for a composite metric)."""
        name, value = self.get()
        if not isinstance(name, list):
            name, value = [name], [value]
        return list(zip(name, value))

    def get_config(self):
        return dict(metric=type(self).__name__, name=self.name,
                    output_names=self.output_names, label_names=self.label_names,
                    **self._kwargs)


_REGISTRY = {}


def register(klass=None, *aliases):
    """Class decorator: make a metric available to ``create`` by its lower-case class name
    (and any ``aliases``)."""
    def do_register(k):
        for name in (k.__name__.lower(),) + aliases:
            _REGISTRY[name.lower()] = k
        return k
    if isinstance(klass, str):     # used as @register('alias', ...)
        aliases = (klass,) + aliases
        return do_register
    return do_register(klass) if klass is not None else do_register


def create(metric, *args, **kwargs):
    """Make a metric from a name (``'acc'``, ``'top_k_accuracy'``, ``'ce'``, ...), a function
    ``f(label, pred) -> value``, a metric object, or a list of any of these (composite)."""
    if isinstance(metric, EvalMetric):
        return metric
    if callable(metric) and not isinstance(metric, type):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, type) and issubclass(metric, EvalMetric):
        return metric(*args, **kwargs)
    if isinstance(metric, (list, tuple)):
        composite = CompositeEvalMetric()
        for m in metric:
            composite.add(create(m, *args, **kwargs))
        return composite
    if isinstance(metric, str):
        try:
            return _REGISTRY[metric.lower()](*args, **kwargs)
        except KeyError:
            raise ValueError(f"Unknown metric {metric!r}; known names: "
                             f"{sorted(_REGISTRY)}") from None
    raise TypeError(f"Cannot create a metric from {metric!r}")


@register('composite')
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together: ``get()`` returns lists of names and values."""

    def __init__(self, metrics=None, name='composite', output_names=None, label_names=None):
        self.metrics = [create(m) for m in (metrics or [])]
        super().__init__(name, output_names=output_names, label_names=label_names)

    def add(self, metric):
        self.metrics.append(create(metric))

    def get_metric(self, index):
        try:
            return self.metrics[index]
        except IndexError:
            raise ValueError(f"Metric index {index} is out of range 0..{len(self.metrics) - 1}"
                             ) from None

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def update_dict(self, labels, preds):
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def reset(self):
        for metric in getattr(self, 'metrics', []):
            metric.reset()

    def reset_local(self):
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, getter):
        names, values = [], []
        for metric in self.metrics:
            name, value = getter(metric)
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return names, values

    def get(self):
        return self._collect(lambda m: m.get())

    def get_global(self):
        return self._collect(lambda m: m.get_global())


@register('acc')
class Accuracy(EvalMetric):
    """Fraction of correct predictions.

    ``preds`` may be class indices (same shape as the labels) or scores / probabilities with
    the classes along ``axis``; then the arg-max along ``axis`` is the predicted class.
    """

    def __init__(self, axis=1, name='accuracy', output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            if pred.shape != label.shape:
                pred = pred.argmax(axis=self.axis)
            pred = pred.astype(np.int64).ravel()
            label = label.astype(np.int64).ravel()
            check_label_shapes(label, pred, shape=True)
            self._add(int((pred == label).sum()), len(pred))


@register('top_k_acc', 'top_k_accuracy')
class TopKAccuracy(EvalMetric):
    """A prediction counts as correct when the true class is among the ``top_k`` scores.

    The name includes k: ``TopKAccuracy(5).get()[0] == 'top_k_accuracy_5'``.
    """

    def __init__(self, top_k=1, name='top_k_accuracy', output_names=None, label_names=None):
        if int(top_k) != top_k or top_k < 1:
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        super().__init__(f"{name}_{top_k}", top_k=top_k,
                         output_names=output_names, label_names=label_names)
        self.top_k = int(top_k)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            if pred.ndim != 2:
                raise ValueError(f"TopKAccuracy expects predictions of shape (batch, classes), "
                                 f"got {pred.shape}")
            label = label.astype(np.int64).ravel()
            if len(label) != len(pred):
                raise ValueError(f"{len(label)} labels for {len(pred)} predictions")
            k = min(self.top_k, pred.shape[1])
            # argpartition puts the k largest scores in the last k columns (in any order).
            top = np.argpartition(pred, -k, axis=1)[:, -k:]
            self._add(int((top == label[:, None]).any(axis=1).sum()), len(label))


@register
class Loss(EvalMetric):
    """Mean of the loss values: ``update(_, losses)`` ignores the labels."""

    def __init__(self, name='loss', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    def update(self, _, preds):
        for pred in _as_list(preds):
            self._add(float(pred.sum()), pred.size)


def _column(label, pred):
    """Give 1-D labels and predictions a column axis so they subtract element by element."""
    if label.ndim == 1:
        label = label.reshape(-1, 1)
    if pred.ndim == 1:
        pred = pred.reshape(-1, 1)
    return label, pred


@register
class MSE(EvalMetric):
    """Mean squared error. Like MXNet 1.x, it averages the per-batch means (exact when all
    batches have the same size)."""

    def __init__(self, name='mse', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            label, pred = _column(label, pred)
            self._add(float(((label - pred) ** 2).mean()), 1)


@register
class MAE(EvalMetric):
    """Mean absolute error (mean of per-batch means, as MSE)."""

    def __init__(self, name='mae', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            label, pred = _column(label, pred)
            self._add(float(np.abs(label - pred).mean()), 1)


@register
class RMSE(EvalMetric):
    """Root mean squared error (mean of per-batch RMSEs, as MXNet 1.x)."""

    def __init__(self, name='rmse', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            label, pred = _column(label, pred)
            self._add(float(np.sqrt(((label - pred) ** 2).mean())), 1)


@register('ce')
class CrossEntropy(EvalMetric):
    """Mean of ``-log p[label]``, where ``preds`` are *probabilities* (after softmax).

    ``eps`` keeps ``log(0)`` finite when the network is certain and wrong.
    """

    def __init__(self, eps=1e-12, name='cross-entropy', output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            label = label.astype(np.int64).ravel()
            if pred.ndim != 2 or len(label) != len(pred):
                raise ValueError(f"CrossEntropy expects probabilities of shape "
                                 f"({len(label)}, classes) for {len(label)} labels, "
                                 f"got {pred.shape}")
            prob = pred[np.arange(len(label)), label]
            self._add(float((-np.log(prob + self.eps)).sum()), len(label))


class CustomMetric(EvalMetric):
    """A metric from a function ``feval(label, pred) -> value`` (NumPy arrays in).

    The function may also return ``(sum, count)`` to weight batches by size.
    """

    def __init__(self, feval, name=None, allow_extra_outputs=False,
                 output_names=None, label_names=None):
        if name is None:
            name = getattr(feval, '__name__', 'custom')
            if name.find('<') != -1:
                name = f"custom({name})"
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        labels, preds = _as_list(labels), _as_list(preds)
        if not self._allow_extra_outputs:
            check_label_shapes(labels, preds)
        for label, pred in zip(labels, preds):
            result = self._feval(label, pred)
            if isinstance(result, tuple):
                self._add(*result)
            else:
                self._add(result, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")
