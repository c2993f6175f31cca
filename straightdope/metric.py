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
import json
import math

import numpy

__all__ = ['EvalMetric', 'CompositeEvalMetric', 'Accuracy', 'TopKAccuracy', 'F1', 'MCC',
           'Perplexity', 'Loss', 'Torch', 'Caffe', 'MSE', 'MAE', 'RMSE', 'CrossEntropy',
           'NegativeLogLikelihood', 'PearsonCorrelation', 'PCC', 'CustomMetric', 'np',
           'create', 'register']


def _to_numpy(x):
    return x.asnumpy() if hasattr(x, 'asnumpy') else numpy.asarray(x)


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


def create(metric=None, *args, **kwargs):
    """Make a metric from

    * a name: ``create('acc')``, ``create('top_k_accuracy', top_k=5)``, ``create('f1')``,
    * a function ``f(label, pred) -> value`` (a CustomMetric),
    * a metric object (returned as is) or class,
    * a list of any of these (a CompositeEvalMetric),
    * a config, as a dict or its JSON text: ``create(json.dumps(m.get_config()))`` rebuilds
      ``m``. The JSON is parsed as data (``json.loads``) and the class is looked up by name
      in the registry: nothing in it is ever evaluated.
    """
    if metric is None:                      # create(metric='acc', ...) / create(**config)
        metric = kwargs.pop('metric', None)
    if isinstance(metric, EvalMetric):
        return metric
    if isinstance(metric, type) and issubclass(metric, EvalMetric):
        return metric(*args, **kwargs)
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, (list, tuple)):
        composite = CompositeEvalMetric()
        for m in metric:
            composite.add(create(m, *args, **kwargs))
        return composite
    if isinstance(metric, dict):
        return create(**metric)
    if isinstance(metric, str) and metric.lstrip()[:1] in ('{', '['):
        config = json.loads(metric)
        if isinstance(config, list):          # MXNet's ["name", {kwargs}] form
            name, config = config
            config = dict(config, metric=name)
        return create(**config)
    if isinstance(metric, str):
        try:
            return _REGISTRY[metric.lower()](*args, **kwargs)
        except KeyError:
            raise ValueError(f"Unknown metric {metric!r}; known names: "
                             f"{sorted(_REGISTRY)}") from None
    raise TypeError(f"Cannot create a metric from {metric!r}: pass a name, a function "
                    f"f(label, pred), an EvalMetric, a list of these or a config")


@register('composite')
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together: ``get()`` returns lists of names and values."""

    def __init__(self, metrics=None, name='composite', output_names=None, label_names=None):
        self.metrics = [create(m) for m in (metrics or [])]
        super().__init__(name, output_names=output_names, label_names=label_names)

    def get_config(self):
        return dict(super().get_config(), metrics=[m.get_config() for m in self.metrics])

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
            pred = pred.astype(numpy.int64).ravel()
            label = label.astype(numpy.int64).ravel()
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
        if not name.endswith(f"_{top_k}"):     # a name from get_config() already has it
            name = f"{name}_{top_k}"
        super().__init__(name, top_k=top_k,
                         output_names=output_names, label_names=label_names)
        self.top_k = int(top_k)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            if pred.ndim != 2:
                raise ValueError(f"TopKAccuracy expects predictions of shape (batch, classes), "
                                 f"got {pred.shape}")
            label = label.astype(numpy.int64).ravel()
            if len(label) != len(pred):
                raise ValueError(f"{len(label)} labels for {len(pred)} predictions")
            k = min(self.top_k, pred.shape[1])
            # argpartition puts the k largest scores in the last k columns (in any order).
            top = numpy.argpartition(pred, -k, axis=1)[:, -k:]
            self._add(int((top == label[:, None]).any(axis=1).sum()), len(label))


@register
class Loss(EvalMetric):
    """Mean of the loss values: ``update(_, losses)`` ignores the labels."""

    def __init__(self, name='loss', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    def update(self, _, preds):
        for pred in _as_list(preds):
            self._add(float(pred.sum()), pred.size)


@register
class Torch(Loss):
    """Mean of a loss (the name MXNet gave losses computed by Torch criterions)."""

    def __init__(self, name='torch', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """Mean of a loss (the name MXNet gave losses computed by Caffe layers)."""

    def __init__(self, name='caffe', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


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
            self._add(float(numpy.abs(label - pred).mean()), 1)


@register
class RMSE(EvalMetric):
    """Root mean squared error (mean of per-batch RMSEs, as MXNet 1.x)."""

    def __init__(self, name='rmse', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            label, pred = _column(label, pred)
            self._add(float(numpy.sqrt(((label - pred) ** 2).mean())), 1)


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
            label = label.astype(numpy.int64).ravel()
            if pred.ndim != 2 or len(label) != len(pred):
                raise ValueError(f"CrossEntropy expects probabilities of shape "
                                 f"({len(label)}, classes) for {len(label)} labels, "
                                 f"got {pred.shape}")
            prob = pred[numpy.arange(len(label)), label]
            self._add(float((-numpy.log(prob + self.eps)).sum()), len(label))


class _BinaryCounts:
    """True/false positives/negatives of a binary classifier, kept for the current window
    ("local") and for the whole run ("global"): F1 and MCC are both computed from them."""

    KINDS = ('tp', 'fp', 'fn', 'tn')

    def __init__(self):
        self.local = dict.fromkeys(self.KINDS, 0)
        self.total = dict.fromkeys(self.KINDS, 0)

    def update(self, label, pred, metric_name):
        label = label.astype(numpy.int64).ravel()
        predicted = pred.argmax(axis=1) if pred.ndim > 1 else (pred > 0.5).astype(numpy.int64)
        if len(numpy.unique(label)) > 2 or label.size and (label.min() < 0 or label.max() > 1):
            raise ValueError(f"{metric_name} supports binary classification only (labels 0 "
                             f"and 1); got labels {numpy.unique(label)[:10]}. For several "
                             f"classes use 'pcc' or 'acc'.")
        if len(label) != len(predicted):
            raise ValueError(f"{metric_name}: {len(label)} labels for {len(predicted)} "
                             f"predictions")
        positive, truth = predicted == 1, label == 1
        counts = {'tp': positive & truth, 'fp': positive & ~truth,
                  'fn': ~positive & truth, 'tn': ~positive & ~truth}
        for kind, hits in counts.items():
            n = int(hits.sum())
            self.local[kind] += n
            self.total[kind] += n

    def reset_local(self):
        self.local = dict.fromkeys(self.KINDS, 0)

    @staticmethod
    def examples(c):
        return sum(c.values())

    @staticmethod
    def fscore(c):
        precision = c['tp'] / (c['tp'] + c['fp']) if c['tp'] + c['fp'] else 0.0
        recall = c['tp'] / (c['tp'] + c['fn']) if c['tp'] + c['fn'] else 0.0
        return 2 * precision * recall / (precision + recall) if precision + recall else 0.0

    @staticmethod
    def mcc(c):
        """Matthews correlation; a zero factor of the denominator counts as 1 (as MXNet)."""
        if not sum(c.values()):
            return 0.0
        tp, fp, fn, tn = (float(c[k]) for k in _BinaryCounts.KINDS)
        denominator = 1.0
        for factor in (tp + fp, tp + fn, tn + fp, tn + fn):
            denominator *= factor or 1.0
        return (tp * tn - fp * fn) / math.sqrt(denominator)


class _BinaryMetric(EvalMetric):
    """F1 and MCC: ``average='macro'`` averages the per-batch scores, ``'micro'`` computes
    one score from the counts of all batches (exact, whatever the batch sizes)."""

    def __init__(self, name, score, average, output_names, label_names):
        if average not in ('macro', 'micro'):
            raise ValueError(f"{type(self).__name__}: average must be 'macro' or 'micro', "
                             f"got {average!r}")
        self.average, self._score = average, score
        self.counts = _BinaryCounts()
        super().__init__(name, output_names=output_names, label_names=label_names)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            self.counts.update(label, pred, type(self).__name__)
        local, total = self.counts.local, self.counts.total
        if self.average == 'macro':
            self._add(self._score(local), 1)
            self.counts.reset_local()
        else:
            n, n_total = _BinaryCounts.examples(local), _BinaryCounts.examples(total)
            self.sum_metric, self.num_inst = self._score(local) * n, n
            self.global_sum_metric, self.global_num_inst = self._score(total) * n_total, n_total

    def reset(self):
        super().reset()
        self.counts = _BinaryCounts()

    def reset_local(self):
        super().reset_local()
        self.counts.reset_local()


@register
class F1(_BinaryMetric):
    """F1 score of a binary classifier: the harmonic mean of precision and recall,
    ``2 * precision * recall / (precision + recall)``. ``preds`` are scores of shape
    (batch, 2) (the arg-max is the predicted class); labels are 0 or 1."""

    def __init__(self, name='f1', output_names=None, label_names=None, average='macro'):
        super().__init__(name, _BinaryCounts.fscore, average, output_names, label_names)


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of a binary classifier, from -1 to 1 (0: no better
    than chance). Unlike F1 it notices a network that always predicts the same class."""

    def __init__(self, name='mcc', output_names=None, label_names=None, average='macro'):
        super().__init__(name, _BinaryCounts.mcc, average, output_names, label_names)


@register
class Perplexity(EvalMetric):
    """``exp(mean of -log p[label])``: how many classes the model is "choosing between"
    on average (1 is perfect). ``preds`` are probabilities with the classes on ``axis``;
    labels equal to ``ignore_label`` are left out."""

    def __init__(self, ignore_label, axis=-1, name='perplexity', output_names=None,
                 label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names)
        self.ignore_label, self.axis = ignore_label, axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            if label.size * pred.shape[self.axis] != pred.size:
                raise ValueError(f"Perplexity: {label.shape} labels do not match "
                                 f"predictions of shape {pred.shape} (classes on axis "
                                 f"{self.axis})")
            label = label.reshape(-1).astype(numpy.int64)
            probs = numpy.moveaxis(pred, self.axis, -1).reshape(len(label), -1)
            keep = numpy.ones(len(label), bool) if self.ignore_label is None \
                else label != self.ignore_label
            picked = probs[numpy.arange(len(label))[keep], label[keep]]
            self._add(float(-numpy.log(numpy.maximum(picked, 1e-10)).sum()), int(keep.sum()))

    def get(self):
        name, value = super().get()
        return name, math.exp(value) if self.num_inst else value

    def get_global(self):
        name, value = super().get_global()
        return name, math.exp(value) if self.global_num_inst else value


@register('nll_loss')
class NegativeLogLikelihood(EvalMetric):
    """Mean of ``-log p[label]`` over the examples, ``preds`` being probabilities of shape
    (batch, classes): the same number as CrossEntropy, under the name 'nll-loss'."""

    def __init__(self, eps=1e-12, name='nll-loss', output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            label = label.ravel().astype(numpy.int64)
            if len(label) != pred.shape[0]:
                raise ValueError(f"NegativeLogLikelihood: {len(label)} labels for "
                                 f"{pred.shape[0]} predictions")
            prob = pred[numpy.arange(len(label)), label]
            self._add(float(-numpy.log(prob + self.eps).sum()), len(label))


@register('pearsonr')
class PearsonCorrelation(EvalMetric):
    """Pearson correlation between predictions and labels (of the same shape).

    ``average='macro'`` averages the per-batch correlations; ``'micro'`` computes one
    correlation over everything seen, from running means and sums of squares (Welford's
    method), so it does not keep the data."""

    def __init__(self, name='pearsonr', output_names=None, label_names=None,
                 average='macro'):
        if average not in ('macro', 'micro'):
            raise ValueError(f"PearsonCorrelation: average must be 'macro' or 'micro', "
                             f"got {average!r}")
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names)

    def reset(self):
        super().reset()
        self._n = 0
        self._mean_label = self._mean_pred = 0.0
        self._ss_label = self._ss_pred = self._co = 0.0

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            check_label_shapes(label, pred, shape=True)
            label = label.ravel().astype(numpy.float64)
            pred = pred.ravel().astype(numpy.float64)
            if self.average == 'macro':
                self._add(float(numpy.corrcoef(pred, label)[0, 1]), 1)
                continue
            self._add(0.0, 1)
            self._n += len(label)
            d_label = label - self._mean_label
            d_pred = pred - self._mean_pred
            self._mean_label += d_label.sum() / self._n
            self._mean_pred += d_pred.sum() / self._n
            self._ss_label += float((d_label * (label - self._mean_label)).sum())
            self._ss_pred += float((d_pred * (pred - self._mean_pred)).sum())
            self._co += float((d_label * (pred - self._mean_pred)).sum())

    def _micro(self):
        return self._co / math.sqrt(self._ss_label * self._ss_pred)

    def get(self):
        if self.average == 'micro' and self.num_inst:
            return self.name, self._micro()
        return super().get()

    def get_global(self):
        if self.average == 'micro' and self.global_num_inst:
            return self.name, self._micro()
        return super().get_global()


@register
class PCC(EvalMetric):
    """Pearson correlation of a confusion matrix (the multiclass MCC): 1 is perfect, 0 is
    chance. ``preds`` are class scores (arg-max taken) or class indices; the number of
    classes grows with the largest index seen."""

    def __init__(self, name='pcc', output_names=None, label_names=None):
        self._classes = 2
        super().__init__(name, output_names=output_names, label_names=label_names)

    def reset(self):
        super().reset()
        self.global_confusion = numpy.zeros((self._classes, self._classes))
        self.confusion = numpy.zeros((self._classes, self._classes))

    def reset_local(self):
        super().reset_local()
        self.confusion = numpy.zeros((self._classes, self._classes))

    def _grow(self, classes):
        extra = classes - self._classes
        self.confusion = numpy.pad(self.confusion, ((0, extra), (0, extra)))
        self.global_confusion = numpy.pad(self.global_confusion, ((0, extra), (0, extra)))
        self._classes = classes

    @staticmethod
    def _score(confusion):
        n = confusion.sum()
        predicted, actual = confusion.sum(axis=1), confusion.sum(axis=0)
        var_pred, var_actual = numpy.sum(predicted * (n - predicted)), numpy.sum(actual * (n - actual))
        if var_pred == 0 or var_actual == 0:
            return float('nan')
        cov = numpy.sum(confusion.diagonal() * n - predicted * actual)
        return float(cov / math.sqrt(var_pred * var_actual))

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            label = label.astype(numpy.int64).ravel()
            pred = (pred.argmax(axis=1) if pred.shape != label.shape and pred.ndim > 1
                    else pred).astype(numpy.int64).ravel()
            if len(label) != len(pred):
                raise ValueError(f"PCC: {len(label)} labels for {len(pred)} predictions")
            largest = int(max(pred.max(initial=0), label.max(initial=0)))
            if largest >= self._classes:
                self._grow(largest + 1)
            batch = numpy.zeros((self._classes, self._classes))
            numpy.add.at(batch, (pred, label), 1)
            self.confusion += batch
            self.global_confusion += batch
        self.num_inst += 1
        self.global_num_inst += 1
        self.sum_metric = self._score(self.confusion) * self.num_inst
        self.global_sum_metric = self._score(self.global_confusion) * self.global_num_inst



@register
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


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A CustomMetric from a function of NumPy arrays (MXNet's ``mx.metric.np``)."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
