"""mx.metric (MXNet 1.9's evaluation metrics) and the mx.nd functions added with it (sort,
argsort, argmin, eye, linspace, cumsum, prod, reshape_like). MXNet is not installable here: the
expected numbers are the ones MXNet's own docstrings print, or NumPy's."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import kit.mx as mx

PREDS = [mx.nd.array([[0.3, 0.7], [0, 1.0], [0.4, 0.6]])]
LABELS = [mx.nd.array([0, 1, 1])]
REGRESSION = ([mx.nd.array(np.array([2.5, 0.0, 2, 8]).reshape(4, 1))],
              [mx.nd.array(np.array([3, -0.5, 2, 7]).reshape(4, 1))])


@pytest.mark.parametrize(("name", "expected"), [
    ("acc", ("accuracy", 2 / 3)), ("f1", ("f1", 0.8)),
    ("ce", ("cross-entropy", 0.57159948348999023)), ("nll_loss", ("nll-loss", 0.5715994834)),
])
def test_classification_metrics_give_mxnets_documented_values(name, expected):
    metric = mx.metric.create(name)
    assert math.isnan(metric.get()[1])  # nothing seen yet
    metric.update(LABELS, PREDS)
    assert metric.get()[0] == expected[0]
    assert metric.get()[1] == pytest.approx(expected[1], rel=1e-7)


@pytest.mark.parametrize(("metric", "expected"), [
    (mx.metric.MAE, ("mae", 0.5)), (mx.metric.MSE, ("mse", 0.375)),
    (mx.metric.RMSE, ("rmse", 0.612372457981)),
])
def test_regression_metrics_give_mxnets_documented_values(metric, expected):
    m = metric()
    m.update(labels=REGRESSION[0], preds=REGRESSION[1])
    assert m.get()[0] == expected[0] and m.get()[1] == pytest.approx(expected[1], rel=1e-7)
    m.update(REGRESSION[0], [mx.nd.array(np.array([2.5, 0.0, 2, 8]).reshape(4, 1))])
    assert m.get()[1] == pytest.approx(expected[1] / 2)  # MXNet 1.9: the mean of per-update values


def test_top_k_accuracy_as_mxnets_example():
    np.random.seed(999)
    metric = mx.metric.TopKAccuracy(top_k=3)
    metric.update([mx.nd.array([2, 6, 9, 2, 3, 4, 7, 8, 9, 6])],
                  [mx.nd.array(np.random.rand(10, 10))])
    assert metric.get() == ("top_k_accuracy_3", pytest.approx(0.3))
    assert mx.metric.create("top_k_acc", top_k=2).name == "top_k_accuracy_2"
    with pytest.raises(ValueError, match="use Accuracy"):
        mx.metric.TopKAccuracy(top_k=1)


def test_local_and_global_sums():
    acc = mx.metric.Accuracy()
    acc.update(LABELS, PREDS)  # 2 of 3
    acc.reset_local()
    acc.update([mx.nd.array([1, 1])], [mx.nd.array([[0.1, 0.9], [0.2, 0.8]])])  # 2 of 2
    assert acc.get() == ("accuracy", 1.0)
    assert acc.get_global() == ("accuracy", 0.8)
    assert acc.get_global_name_value() == [("accuracy", 0.8)]
    acc.reset()
    assert math.isnan(acc.get_global()[1])


def test_f1_macro_averages_updates_and_micro_pools_them():
    batches = [([mx.nd.array([0, 1, 1])], PREDS),
               ([mx.nd.array([1, 0])], [mx.nd.array([[0.9, 0.1], [0.2, 0.8]])])]
    macro, micro = mx.metric.F1(), mx.metric.F1(average="micro")
    for labels, preds in batches:
        macro.update(labels, preds)
        micro.update(labels, preds)
    assert macro.get()[1] == pytest.approx((0.8 + 0.0) / 2)
    # pooled: tp 2, fp 2, fn 1 -> precision 1/2, recall 2/3, F1 4/7
    assert micro.get()[1] == pytest.approx(4 / 7)
    with pytest.raises(ValueError, match="only supports binary classification"):
        mx.metric.F1().update([mx.nd.array([0, 1, 2])], [mx.nd.ones((3, 2))])


def test_composite_create_update_dict_and_configs():
    composite = mx.metric.create(["acc", "f1"])
    composite.update(LABELS, PREDS)
    assert composite.get() == (["accuracy", "f1"], [pytest.approx(2 / 3), pytest.approx(0.8)])
    assert composite.get_name_value() == [("accuracy", pytest.approx(2 / 3)),
                                          ("f1", pytest.approx(0.8))]
    assert isinstance(composite.get_metric(1), mx.metric.F1)
    with pytest.raises(ValueError, match="out of range"):
        composite.get_metric(2)
    again = mx.metric.create(json.dumps(composite.get_config()))
    assert again.get_config() == composite.get_config()
    named = mx.metric.create("acc", output_names=["out"], label_names=["y"])
    named.update_dict({"y": LABELS[0], "other": mx.nd.zeros(3)},
                      {"out": PREDS[0], "aux": mx.nd.zeros((3, 2))})
    assert named.get()[1] == pytest.approx(2 / 3)
    assert mx.metric.create(named) is named
    assert mx.metric.create({"metric": "acc", "axis": 0}).axis == 0
    assert str(mx.metric.Loss()) == "EvalMetric: {'loss': nan}"


def test_loss_custom_metrics_and_errors():
    loss = mx.metric.Loss()
    loss.update(None, [mx.nd.array([1.0, 2.0]), mx.nd.array([6.0])])
    assert loss.get() == ("loss", 3.0)
    custom = mx.metric.np(lambda label, pred: np.abs(label - pred.argmax(1)).mean())
    custom.update(LABELS, PREDS)
    assert custom.get() == ("custom(<lambda>)", pytest.approx(1 / 3))

    def total(label, pred):
        return float(np.abs(label - pred.argmax(1)).sum()), len(label)

    counted = mx.metric.create(total)
    counted.update(LABELS * 2, PREDS * 2)
    assert counted.get() == ("total", pytest.approx(1 / 3))
    with pytest.raises(NotImplementedError, match="cannot be serialized"):
        counted.get_config()
    with pytest.raises(ValueError, match="'nope' is not registered.*acc"):
        mx.metric.create("nope")
    with pytest.raises(ValueError, match="Shape of labels 1 does not match shape of predictions 2"):
        mx.metric.Accuracy().update(LABELS, PREDS * 2)
    with pytest.raises(NotImplementedError, match="MCC is not implemented.*Accuracy"):
        mx.metric.MCC()


def test_accuracy_over_a_training_loop_as_d2ls_mxnet_chapters_write_it():
    rng = np.random.default_rng(0)
    features = rng.standard_normal((64, 2)).astype(np.float32)
    labels = (features[:, 0] + features[:, 1] > 0).astype(np.float32)
    net = mx.gluon.nn.Dense(2)
    net.initialize(mx.init.Xavier())
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    metric = mx.metric.Accuracy()
    for _ in range(20):
        metric.reset()
        for start in range(0, 64, 16):
            x = mx.nd.array(features[start:start + 16])
            y = mx.nd.array(labels[start:start + 16])
            with mx.autograd.record():
                out = net(x)
                loss = loss_fn(out, y)
            loss.backward()
            trainer.step(16)
            metric.update([y], [out])
    name, accuracy = metric.get()
    assert name == "accuracy" and accuracy > 0.9


# --- mx.nd additions ------------------------------------------------------------------------------
X = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], dtype=np.float32)


def test_nd_orderings_scans_and_products_as_numpy():
    x = mx.nd.array(X)
    np.testing.assert_array_equal(mx.nd.sort(x).asnumpy(), np.sort(X))
    np.testing.assert_array_equal(mx.nd.sort(x, axis=None, is_ascend=False).asnumpy(),
                                  -np.sort(-X.ravel()))
    np.testing.assert_array_equal(mx.nd.argsort(x, axis=0).asnumpy(), np.argsort(X, 0))
    assert mx.nd.argsort(x).dtype == np.float32 and x.argsort().dtype == np.float32
    np.testing.assert_array_equal(mx.nd.argmin(x, axis=1).asnumpy(), [1, 0])
    assert mx.nd.argmin(x).asnumpy().tolist() == [3.0] == mx.nd.argmin(x).reshape((1,)).asnumpy()
    assert mx.nd.argmax(x).shape == (1,)
    np.testing.assert_array_equal(mx.nd.argmin(x, axis=1, keepdims=True).shape, (2, 1))
    np.testing.assert_array_equal(mx.nd.cumsum(x, axis=1).asnumpy(), np.cumsum(X, 1))
    np.testing.assert_array_equal(mx.nd.cumsum(x).asnumpy(), np.cumsum(X))
    np.testing.assert_array_equal(mx.nd.prod(x).asnumpy(), [0.0])
    np.testing.assert_array_equal(x.prod(axis=1, keepdims=True).asnumpy(),
                                  np.prod(X, 1, keepdims=True))
    np.testing.assert_array_equal(mx.nd.prod(x, axis=0, exclude=True).asnumpy(), np.prod(X, 1))
    np.testing.assert_array_equal(mx.nd.reshape_like(x, mx.nd.zeros((3, 2))).asnumpy(),
                                  X.reshape(3, 2))
    np.testing.assert_array_equal(mx.nd.eye(3, k=1).asnumpy(), np.eye(3, k=1))
    np.testing.assert_array_equal(mx.nd.eye(2, 3, dtype="float64").asnumpy(), np.eye(2, 3))
    np.testing.assert_allclose(mx.nd.linspace(0, 1, 5).asnumpy(), np.linspace(0, 1, 5))
    np.testing.assert_allclose(mx.nd.linspace(0, 1, 4, endpoint=False).asnumpy(),
                               [0, 0.25, 0.5, 0.75])


def test_nd_sort_cumsum_and_prod_are_differentiable():
    x = mx.nd.array(X)
    x.attach_grad()
    weights = mx.nd.arange(6).reshape((2, 3))
    with mx.autograd.record():
        y = (mx.nd.sort(x) * weights).sum() + mx.nd.cumsum(x, axis=1).sum() + mx.nd.prod(x + 1)
    y.backward()
    order = np.argsort(X, 1)
    expected = np.zeros_like(X)
    np.put_along_axis(expected, order, np.arange(6.0).reshape(2, 3), 1)
    expected += np.array([3.0, 2.0, 1.0])
    expected += np.prod(X + 1) / (X + 1)
    np.testing.assert_allclose(x.grad.asnumpy(), expected, rtol=1e-5)
