"""Tests for straightdope.metric, with values computed by hand."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from straightdope import metric


def test_accuracy_by_hand():
    acc = metric.Accuracy()
    assert acc.get()[0] == 'accuracy' and math.isnan(acc.get()[1])
    # argmax per row: 0, 1, 0  vs labels 0, 1, 1  -> 2 of 3
    acc.update(np.array([0, 1, 1]), np.array([[.9, .1], [.2, .8], [.7, .3]]))
    assert acc.get() == ('accuracy', pytest.approx(2 / 3))
    # class indices directly (same shape as labels): 1 of 2 right, total 3 of 5
    acc.update([np.array([2, 3])], [np.array([2, 0])])
    assert acc.get()[1] == pytest.approx(3 / 5)
    assert acc.num_inst == 5 and acc.sum_metric == 3
    acc.reset()
    assert acc.num_inst == 0 and math.isnan(acc.get()[1])


def test_accuracy_axis_and_ndarray():
    from straightdope import ndarray as nd
    acc = metric.Accuracy(axis=0)
    acc.update(nd.array(np.array([1, 0])), nd.array(np.array([[0., 1.], [1., 2.]])))
    assert acc.get()[1] == 0.5  # argmax over axis 0: [1, 1]


def test_accuracy_mismatch_errors():
    acc = metric.Accuracy()
    with pytest.raises(ValueError, match="1 label array.*2 prediction"):
        acc.update([np.zeros(2)], [np.zeros((2, 3)), np.zeros((2, 3))])
    with pytest.raises(ValueError, match=r"Shape of labels \(3,\).*\(2,\)"):
        acc.update(np.zeros(3), np.zeros((2, 4)))


def test_top_k_accuracy():
    top2 = metric.TopKAccuracy(top_k=2)
    assert top2.get()[0] == 'top_k_accuracy_2'
    assert metric.TopKAccuracy(5).get()[0] == 'top_k_accuracy_5'
    pred = np.array([[.1, .5, .4],      # top2 = {1, 2}; label 2 -> hit
                     [.7, .2, .1],      # top2 = {0, 1}; label 2 -> miss
                     [.3, .3, .4]])     # top2 = {2, 0 or 1}; label 2 -> hit
    top2.update(np.array([2, 2, 2]), pred)
    assert top2.get()[1] == pytest.approx(2 / 3)
    top1 = metric.TopKAccuracy(1)
    top1.update(np.array([1, 0, 2]), pred)
    acc = metric.Accuracy()
    acc.update(np.array([1, 0, 2]), pred)
    assert top1.get()[1] == acc.get()[1] == 1.0


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 20), st.integers(2, 8), st.integers(0, 10_000))
def test_top_k_matches_sorting(n, classes, seed):
    rng = np.random.RandomState(seed)
    pred = rng.rand(n, classes)
    label = rng.randint(0, classes, n)
    k = rng.randint(1, classes + 1)
    m = metric.TopKAccuracy(k)
    m.update(label, pred)
    expected = np.mean([label[i] in np.argsort(-pred[i])[:k] for i in range(n)])
    assert m.get()[1] == pytest.approx(expected)


def test_loss_mse_mae_rmse_cross_entropy():
    loss = metric.Loss()
    loss.update(None, np.array([1.0, 2.0, 3.0]))
    loss.update(None, [np.array([6.0])])
    assert loss.get() == ('loss', pytest.approx(12 / 4))

    mse = metric.MSE()
    mse.update(np.array([1.0, 2.0]), np.array([[1.5], [2.5]]))   # batch mean 0.25
    mse.update(np.array([0.0]), np.array([2.0]))                 # batch mean 4
    assert mse.get() == ('mse', pytest.approx((0.25 + 4) / 2))
    mae = metric.MAE()
    mae.update(np.array([1.0, 2.0]), np.array([0.0, 4.0]))
    assert mae.get() == ('mae', pytest.approx(1.5))
    rmse = metric.RMSE()
    rmse.update(np.array([0.0, 0.0]), np.array([3.0, 4.0]))
    assert rmse.get()[1] == pytest.approx(math.sqrt(12.5))

    ce = metric.CrossEntropy()
    ce.update(np.array([0, 1]), np.array([[0.5, 0.5], [0.2, 0.8]]))
    assert ce.get() == ('cross-entropy', pytest.approx(-(math.log(.5) + math.log(.8)) / 2))
    with pytest.raises(ValueError, match="probabilities"):
        ce.update(np.array([0, 1, 1]), np.array([[0.5, 0.5]]))


def test_composite_and_name_value():
    comp = metric.CompositeEvalMetric([metric.Accuracy(), 'ce'])
    comp.add(metric.TopKAccuracy(2))
    labels, preds = np.array([0, 1]), np.array([[0.6, 0.3, 0.1], [0.6, 0.3, 0.1]])
    comp.update(labels, preds)
    names, values = comp.get()
    assert names == ['accuracy', 'cross-entropy', 'top_k_accuracy_2']
    assert values[0] == 0.5 and values[2] == 1.0
    assert values[1] == pytest.approx(-(math.log(.6) + math.log(.3)) / 2)
    assert comp.get_name_value()[0] == ('accuracy', 0.5)
    assert isinstance(comp.get_metric(1), metric.CrossEntropy)
    with pytest.raises(ValueError, match="out of range"):
        comp.get_metric(5)
    comp.reset()
    assert all(math.isnan(v) for v in comp.get()[1])


def test_global_counters_survive_reset_local():
    acc = metric.Accuracy()
    acc.update(np.array([1]), np.array([1]))
    acc.reset_local()
    acc.update(np.array([1]), np.array([0]))
    assert acc.get()[1] == 0.0 and acc.get_global()[1] == 0.5


def test_create():
    assert isinstance(metric.create('acc'), metric.Accuracy)
    assert isinstance(metric.create('Accuracy'), metric.Accuracy)
    assert metric.create('top_k_accuracy', top_k=3).name == 'top_k_accuracy_3'
    assert isinstance(metric.create('ce'), metric.CrossEntropy)
    assert isinstance(metric.create('loss'), metric.Loss)
    assert isinstance(metric.create(['acc', 'mse']), metric.CompositeEvalMetric)
    m = metric.Accuracy()
    assert metric.create(m) is m
    with pytest.raises(ValueError, match="Unknown metric 'nope'.*accuracy"):
        metric.create('nope')

    def abs_err(label, pred):
        return np.abs(label - pred).sum(), label.size

    custom = metric.create(abs_err)
    custom.update([np.array([1.0, 2.0])], [np.array([2.0, 2.0])])
    assert custom.get() == ('abs_err', 0.5)
