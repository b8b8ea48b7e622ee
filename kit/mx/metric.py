"""`mx.metric`: MXNet 1.9's online evaluation metrics, on NumPy copies of the arrays.

A metric accumulates `sum_metric` and `num_inst` over `update(labels, preds)` calls (lists of
NDArrays, or one NDArray each); `get()` is (name, sum_metric / num_inst), NaN before any update.
Since MXNet 1.5 a metric also keeps global sums: `reset_local()` clears the local ones only,
`get_global()` reads the others. `create('acc')`, `create(['acc', 'f1'])` (a
CompositeEvalMetric), `create(fn)` (a CustomMetric) and `create(metric.get_config())` rebuild
metrics by name, as MXNet's registry does.

>>> import kit.mx as mx
>>> acc = mx.metric.Accuracy()
>>> acc.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
>>> acc.get()
('accuracy', 0.6666666666666666)
"""

from __future__ import annotations

import json
from collections import OrderedDict

import numpy

from kit.mx.ndarray import NDArray

_REGISTRY = {}  # lower-case name or alias -> metric class


def register(cls):
    """Make `create(name)` find the class under its lower-case name."""
    _REGISTRY[cls.__name__.lower()] = cls
    return cls


def alias(*names):
    """Make `create(name)` find the class under these names too."""

    def add(cls):
        for name in names:
            _REGISTRY[name.lower()] = cls
        return cls

    return add


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Refuse labels and preds of different lengths (or shapes, with shape=True), as MXNet's
    helper; with wrap=True, one NDArray becomes a list of one."""
    have = (labels.shape, preds.shape) if shape else (len(labels), len(preds))
    if have[0] != have[1]:
        raise ValueError(f"Shape of labels {have[0]} does not match shape of predictions "
                         f"{have[1]}")
    if wrap:
        labels = [labels] if isinstance(labels, NDArray) else labels
        preds = [preds] if isinstance(preds, NDArray) else preds
    return labels, preds


def _host(array):
    return array.asnumpy() if isinstance(array, NDArray) else numpy.asarray(array)


class EvalMetric:
    """The base of all metrics: local and global sums, get/reset, configs (MXNet's)."""

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self):
        """The arguments that rebuild this metric: `create(metric.get_config())`."""
        return {**self._kwargs, "metric": type(self).__name__, "name": self.name,
                "output_names": self.output_names, "label_names": self.label_names}

    def update_dict(self, label, pred):
        """update() with the named labels and predictions (output_names / label_names pick)."""
        preds = [pred[n] for n in self.output_names] if self.output_names is not None \
            else list(pred.values())
        labels = [label[n] for n in self.label_names] if self.label_names is not None \
            else list(label.values())
        self.update(labels, preds)

    def update(self, labels, preds):
        raise NotImplementedError(f"{type(self).__name__}.update: a metric must define update")

    def _add(self, value, count):
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def reset(self):
        """Clear the local and global sums."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Clear the local sums only (an epoch's, say); the global ones keep counting."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def _value(self, total, count):
        return float("nan") if count == 0 else total / count

    def get(self):
        """(name, value) of the local sums: NaN before any update."""
        return self.name, self._value(self.sum_metric, self.num_inst)

    def get_global(self):
        """(name, value) of the global sums (the local ones for a metric without them)."""
        if not self._has_global_stats:
            return self.get()
        return self.name, self._value(self.global_sum_metric, self.global_num_inst)

    def get_name_value(self):
        """[(name, value), ...]: get() as a list of pairs."""
        return _pairs(*self.get())

    def get_global_name_value(self):
        """[(name, value), ...]: get_global() as a list of pairs."""
        return _pairs(*self.get_global())


def _pairs(name, value):
    names = name if isinstance(name, list) else [name]
    values = value if isinstance(value, list) else [value]
    return list(zip(names, values, strict=True))


def create(metric, *args, **kwargs):
    """A metric from a name ('acc', 'mse', ...), an EvalMetric (returned as is), a function
    (a CustomMetric), a list (a CompositeEvalMetric of each), a config dict or its JSON."""
    if callable(metric) and not isinstance(metric, type):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise ValueError("mx.metric.create: metric is already an instance; additional "
                             "arguments are invalid")
        return metric
    if isinstance(metric, dict):
        config = dict(metric)
        return create(config.pop("metric"), **config)
    if not isinstance(metric, str):
        raise TypeError(f"mx.metric.create: metric must be a name, an EvalMetric, a function "
                        f"or a list, got {type(metric).__name__}")
    if metric.startswith(("{", "[")):
        config = json.loads(metric)
        return create(*config) if isinstance(config, list) else create(config)
    cls = _REGISTRY.get(metric.lower())
    if cls is None:
        raise ValueError(f"mx.metric.create: {metric.lower()!r} is not registered. Fix: one of "
                         f"{', '.join(sorted(_REGISTRY))}, or register a class with "
                         f"mx.metric.register")
    return cls(*args, **kwargs)


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; get() gives ([names], [values])."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.metrics = [create(m) for m in metrics or []]

    def add(self, metric):
        """Add a child metric (anything create() takes)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The index-th child metric."""
        if not -len(self.metrics) <= index < len(self.metrics):
            raise ValueError(f"Metric index {index} is out of range 0 and {len(self.metrics)}")
        return self.metrics[index]

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict((k, v) for k, v in labels.items() if k in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict((k, v) for k, v in preds.items() if k in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in getattr(self, "metrics", ()):  # (EvalMetric.__init__ resets before them)
            metric.reset()

    def reset_local(self):
        for metric in self.metrics:
            metric.reset_local()

    def _joined(self, method):
        names, values = [], []
        for metric in self.metrics:
            name, value = getattr(metric, method)()
            names += name if isinstance(name, list) else [name]
            values += value if isinstance(value, list) else [value]
        return names, values

    def get(self):
        return self._joined("get")

    def get_global(self):
        return self._joined("get_global")

    def get_config(self):
        return {**super().get_config(), "metrics": [m.get_config() for m in self.metrics]}


@register
class Loss(EvalMetric):
    """The mean of the values of `preds` (the losses of a batch); labels are ignored."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        for pred in [preds] if isinstance(preds, NDArray) else preds:
            values = _host(pred)
            self._add(float(values.sum()), values.size)


@register
class CustomMetric(EvalMetric):
    """A metric from feval(label, pred) on NumPy arrays: a value per pair, or (sum, count)."""

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if name is None:
            name = feval.__name__
            name = f"custom({name})" if "<" in name else name
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels, strict=False):
            value = self._feval(_host(label), _host(pred))
            self._add(*(value if isinstance(value, tuple) else (value, 1)))

    def get_config(self):
        raise NotImplementedError("mx.metric.CustomMetric cannot be serialized (its function "
                                  "is code)")


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A CustomMetric from a function of NumPy arrays (MXNet's mx.metric.np)."""
    return CustomMetric(numpy_feval, name, allow_extra_outputs)


# the classification and regression metrics register themselves (their module needs the above)
from kit.mx._metrics import (  # noqa: E402
    F1,
    MAE,
    MSE,
    RMSE,
    Accuracy,
    CrossEntropy,
    NegativeLogLikelihood,
    TopKAccuracy,
)

_NOT_HERE = ("MCC", "PCC", "PearsonCorrelation", "Perplexity", "Torch", "Caffe")


def __getattr__(name):
    if name in _NOT_HERE:
        raise NotImplementedError(
            f"mx.metric.{name} is not implemented in kit. kit.mx.metric has Accuracy, "
            f"TopKAccuracy, F1, MAE, MSE, RMSE, CrossEntropy, NegativeLogLikelihood, Loss, "
            f"CustomMetric and CompositeEvalMetric; write others with mx.metric.np(fn)"
        )
    raise AttributeError(f"module 'kit.mx.metric' has no attribute {name!r}")


__all__ = ["Accuracy", "CompositeEvalMetric", "CrossEntropy", "CustomMetric", "EvalMetric",
           "F1", "Loss", "MAE", "MSE", "NegativeLogLikelihood", "RMSE", "TopKAccuracy", "alias",
           "check_label_shapes", "create", "np", "register"]
