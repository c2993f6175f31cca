"""Losses: how wrong a prediction is, one number per sample.

A loss is a HybridBlock: ``loss_fn(pred, label)`` returns one value per sample (shape
``(batch,)``), averaged over every axis except ``batch_axis``. ``loss.backward()`` on that
vector sums it (the head gradient is all ones), which is why ``Trainer.step(batch_size)``
divides the gradient by the batch size.

Every loss is written once, in ``hybrid_forward(F, pred, label, ...)`` with ``F`` ops only,
so the same code runs imperatively (F = nd), hybridized, and on Symbols for export::

    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    with autograd.record():
        l = loss_fn(net(X), y)        # shape (batch,)
    l.backward()

Optional arguments shared by all losses, as in MXNet:

* ``weight``: a global scalar multiplier.
* ``sample_weight`` (call argument): per-sample weights, broadcast against the loss
  before averaging, e.g. shape ``(batch, 1)``.
"""
from __future__ import annotations

import math
import numbers

from .. import ndarray
from .hybrid_block import HybridBlock

__all__ = ['Loss', 'L2Loss', 'L1Loss', 'SoftmaxCrossEntropyLoss', 'SoftmaxCELoss',
           'SigmoidBinaryCrossEntropyLoss', 'SigmoidBCELoss', 'KLDivLoss', 'HuberLoss',
           'HingeLoss', 'SquaredHingeLoss', 'LogisticLoss', 'TripletLoss',
           'CosineEmbeddingLoss', 'PoissonNLLLoss', 'CTCLoss']


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    """loss * sample_weight (broadcast) * weight (a Python number)."""
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, numbers.Number):
            raise TypeError(f"a loss's weight must be a Python number, got {weight!r}; "
                            f"pass per-sample weights as sample_weight when calling it")
        loss = loss * weight
    return loss


def _reshape_like(F, x, y):
    # Labels often arrive as (batch,) for predictions (batch, 1): give them pred's shape.
    # reshape_like (not x.reshape(y.shape)) because a Symbol has no .shape while tracing.
    return F.reshape_like(x, y)


class Loss(HybridBlock):
    """Base class: stores the scalar `weight` and the `batch_axis` to keep when averaging."""

    def __init__(self, weight, batch_axis, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return f"{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def _mean_per_sample(self, F, loss):
        """Average over every axis except the batch axis: one value per sample."""
        if F is ndarray and loss.ndim == 1 and self._batch_axis in (0, -1):
            return loss         # only the batch axis: nothing to average, no op to record
        return F.mean(loss, axis=self._batch_axis, exclude=True)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define hybrid_forward")


class L2Loss(Loss):
    r"""Half the mean squared error: ``L = 0.5 * mean((label - pred)**2)`` per sample.

    The 0.5 makes the gradient simply ``pred - label``.
    """

    def __init__(self, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(label - pred)
        loss = _apply_weighting(F, loss, self._weight / 2, sample_weight)
        return self._mean_per_sample(F, loss)


class L1Loss(Loss):
    r"""Mean absolute error: ``L = mean(|label - pred|)`` per sample. Less sensitive to
    outliers than L2: a large error costs linearly, not quadratically."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean_per_sample(F, loss)


class SigmoidBinaryCrossEntropyLoss(Loss):
    r"""Binary cross-entropy for labels in {0, 1} (or probabilities in [0, 1]).

    With ``from_sigmoid=False`` (default) `pred` holds raw scores x and the loss is computed
    from them directly, in the overflow-free form
    ``max(x, 0) - x * z + log(1 + exp(-|x|))``, which equals
    ``-(z * log(sigmoid(x)) + (1 - z) * log(1 - sigmoid(x)))`` but never takes the log of 0
    or the exp of a large number. With ``from_sigmoid=True`` `pred` is already a probability.
    ``pos_weight`` (call argument) weights the positive term, for imbalanced classes.
    """

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(F, label, pred)
        if not self._from_sigmoid:
            # log(1 + exp(-|x|)) is softrelu(-|x|): at most log(2), never overflows.
            softplus = F.Activation(-F.abs(pred), act_type='softrelu')
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + softplus
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (softplus + F.relu(-pred))
        else:
            eps = 1e-12       # keeps log() finite when a probability is exactly 0 or 1
            if pos_weight is None:
                loss = -(F.log(pred + eps) * label + F.log(1. - pred + eps) * (1. - label))
            else:
                loss = -(F.broadcast_mul(F.log(pred + eps) * label, pos_weight)
                         + F.log(1. - pred + eps) * (1. - label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean_per_sample(F, loss)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    r"""Cross-entropy of softmax(pred) against the true class: ``L = -log softmax(pred)[label]``.

    Parameters
    ----------
    axis : int            the class axis of `pred`
    sparse_label : bool   True: `label` holds class indices, shape (batch,);
                          False: `label` holds a distribution over classes, shaped like pred
    from_logits : bool    True: `pred` already holds log-probabilities (skip log_softmax)

    log_softmax is computed stably (subtracting the max first), which is why losses take raw
    scores rather than softmax outputs.
    """

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if F is ndarray and self._sparse_label and not self._from_logits:
            # Imperatively one fused op (see ops/reduce.py): the same numbers, a quarter
            # of the ops to dispatch and record.
            # Without sample weights (which broadcast against the kept axis), keepdims=False
            # gives (batch,) for a 2-D pred: nothing left to average, one op less.
            loss = F._sparse_softmax_ce(pred, label, axis=self._axis,
                                        keepdims=sample_weight is not None)
            loss = _apply_weighting(F, loss, self._weight, sample_weight)
            return self._mean_per_sample(F, loss)
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(F, label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean_per_sample(F, loss)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    r"""Kullback-Leibler divergence ``sum(label * (log(label) - pred))`` / number of elements.

    `label` is a probability distribution; `pred` holds log-probabilities when
    ``from_logits=True`` (default, as in MXNet), else raw scores that get a log_softmax.
    """

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean_per_sample(F, loss)


class HuberLoss(Loss):
    r"""Smooth L1: quadratic for small errors, linear for large ones.

        L = 0.5 / rho * err**2   if |err| <= rho
            |err| - 0.5 * rho    otherwise
    """

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        # F.where, not a Python `if`: the choice is made per element, inside the graph.
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho,
                       (0.5 / self._rho) * F.square(loss))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean_per_sample(F, loss)


class HingeLoss(Loss):
    r"""SVM hinge loss for labels in {-1, 1}: ``L = max(0, margin - pred * label)``."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.relu(self._margin - pred * label)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean_per_sample(F, loss)


class SquaredHingeLoss(Loss):
    r"""Squared hinge loss for labels in {-1, 1}: ``L = max(0, margin - pred * label)**2``."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean_per_sample(F, loss)


class LogisticLoss(Loss):
    r"""Logistic loss ``log(1 + exp(-pred * label))`` for labels in {-1, 1}
    (``label_format='signed'``) or {0, 1} (``'binary'``), computed stably."""

    def __init__(self, weight=None, batch_axis=0, label_format='signed', **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ('signed', 'binary'):
            raise ValueError(f"label_format must be 'signed' or 'binary', got {label_format!r}")
        self._label_format = label_format

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        if self._label_format == 'signed':
            label = (label + 1.0) / 2.0        # {-1, 1} -> {0, 1}
        loss = F.relu(pred) - pred * label + F.Activation(-F.abs(pred), act_type='softrelu')
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean_per_sample(F, loss)


class TripletLoss(Loss):
    r"""Triplet loss for embeddings: the anchor `pred` should be closer to `positive` than
    to `negative` by at least `margin`:
    ``L = max(0, |pred - positive|^2 - |pred - negative|^2 + margin)`` per sample."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative, sample_weight=None):
        positive = _reshape_like(F, positive, pred)
        negative = _reshape_like(F, negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred),
                     axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, sample_weight)


class CosineEmbeddingLoss(Loss):
    r"""For pairs of embeddings: similar pairs (label 1) should point the same way,
    dissimilar ones (label -1) should not, beyond a ``margin``::

        cos = input1 . input2 / (|input1| |input2|)     per sample
        L = 1 - cos            where label == 1
        L = max(0, cos - margin)  where label == -1

    As in MXNet, the result has shape (batch, 1).
    """

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(F, input1, input2)
        dot = F.sum(input1 * input2, axis=-1, keepdims=True)
        norms = F.sqrt(F.sum(F.square(input1), axis=-1, keepdims=True)) * \
            F.sqrt(F.sum(F.square(input2), axis=-1, keepdims=True))
        cos = dot / F.maximum(norms, 1e-12)          # 1e-12: zero vectors give cos = 0
        label = F.reshape_like(label, cos)
        loss = (1 - cos) * (label == 1) + F.relu(cos - self._margin) * (label == -1)
        return _apply_weighting(F, loss, self._weight, sample_weight)


class PoissonNLLLoss(Loss):
    r"""Negative log-likelihood of counts ``target`` under a Poisson distribution with
    mean ``pred`` (or ``exp(pred)`` with ``from_logits=True``, the default)::

        L = exp(pred) - target * pred                 (from_logits)
        L = pred - target * log(pred + epsilon)       (otherwise)

    ``compute_full`` adds Stirling's approximation of ``log(target!)`` (for targets > 1),
    the term that does not depend on the prediction. As in MXNet, the result is the mean
    over *all* elements: one number for the batch.
    """

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False,
                 **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits, self._compute_full = from_logits, compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(F, target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            safe = F.maximum(target, 1.0)        # the term is 0 for targets <= 1 anyway
            stirling = safe * F.log(safe) - safe + 0.5 * F.log(2 * math.pi * safe)
            loss = loss + stirling * (target > 1)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CTCLoss(Loss):
    r"""Connectionist temporal classification: the loss of labelling a sequence (speech,
    handwriting) without knowing which frames belong to which label. ``-log p(label)``,
    summed over every alignment of the label with the frames (ops/ctc.py).

    layout : 'NTC' or 'TNC'   of `pred`, raw scores over the alphabet; the LAST class is
                              the blank (no label at this frame)
    label_layout : 'NT' or 'TN'   `label`: class indices, padded with -1
    Call with ``pred, label[, pred_lengths][, label_lengths][, sample_weight]``: the
    lengths (batch,) say how many frames and labels of each sample count.
    """

    def __init__(self, layout='NTC', label_layout='NT', weight=None, **kwargs):
        if layout not in ('NTC', 'TNC'):
            raise ValueError(f"CTCLoss: layout must be 'NTC' or 'TNC', got {layout!r}")
        if label_layout not in ('NT', 'TN'):
            raise ValueError(f"CTCLoss: label_layout must be 'NT' or 'TN', got "
                             f"{label_layout!r}")
        self._layout, self._label_layout = layout, label_layout
        super().__init__(weight, label_layout.find('N'), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None,
                       sample_weight=None):
        if self._layout == 'NTC':
            pred = F.transpose(pred, axes=(1, 0, 2))
        if self._batch_axis == 1:
            label = F.transpose(label)
        lengths = [a for a in (pred_lengths, label_lengths) if a is not None]
        loss = F.CTCLoss(pred, label, *lengths, use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label='last')
        return _apply_weighting(F, loss, self._weight, sample_weight)
