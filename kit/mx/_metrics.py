"""The classification and regression metrics of mx.metric (kit/mx/metric.py has the base class,
the registry, create, CompositeEvalMetric, Loss and CustomMetric): MXNet 1.9's, on NumPy copies
of the arrays."""

from __future__ import annotations

import numpy

from kit.mx.metric import EvalMetric, _host, alias, check_label_shapes, register


def _as_columns(array):
    """A 1-D array as one column (MAE, MSE and RMSE compare (N, 1) with (N, 1))."""
    return array.reshape(array.shape[0], 1) if array.ndim == 1 else array


# --- classification ---------------------------------------------------------------------------
@register
@alias("acc")
class Accuracy(EvalMetric):
    """The fraction of predictions equal to the labels; a prediction of another shape than its
    label is a score per class, along `axis`, whose argmax is taken."""

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            predicted = _host(pred)
            if predicted.shape != tuple(label.shape):
                predicted = predicted.argmax(axis=self.axis)
            predicted = predicted.astype(numpy.int32).ravel()
            truth = _host(label).astype(numpy.int32).ravel()
            check_label_shapes(truth, predicted)
            self._add(int((predicted == truth).sum()), len(predicted))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """The fraction of samples whose label is among the top_k highest-scored classes."""

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        if top_k <= 1:
            raise ValueError("mx.metric.TopKAccuracy: please use Accuracy if top_k is no more "
                             "than 1")
        self.top_k = top_k
        self.name += f"_{top_k}"

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            scores = _host(pred).astype(numpy.float32)
            if scores.ndim > 2:
                raise ValueError("mx.metric.TopKAccuracy: predictions should be no more than 2 "
                                 "dims")
            truth = _host(label).astype(numpy.int32).ravel()
            if scores.ndim == 1:  # class indices: an exact match
                self._add(int((scores.astype(numpy.int32) == truth).sum()), len(truth))
                continue
            k = min(scores.shape[1], self.top_k)
            best = numpy.argpartition(scores, -k, axis=1)[:, -k:]
            self._add(int((best == truth[:, None]).any(axis=1).sum()), scores.shape[0])


class _BinaryCounts:
    """True/false positives and negatives of a binary classifier, local and global."""

    def __init__(self):
        self.reset()

    def reset_local(self):
        self.tp = self.fp = self.fn = self.tn = 0

    def reset(self):
        self.reset_local()
        self.global_tp = self.global_fp = self.global_fn = self.global_tn = 0

    def update(self, label, pred, owner):
        scores = _host(pred)
        truth = _host(label).astype(numpy.int32)
        check_label_shapes(truth, scores)
        if len(numpy.unique(truth)) > 2:
            raise ValueError(f"{owner} currently only supports binary classification.")
        positive = scores.argmax(axis=1) == 1
        real = truth == 1
        counts = [int((positive & real).sum()), int((positive & ~real).sum()),
                  int((~positive & real).sum()), int((~positive & ~real).sum())]
        self.tp, self.fp, self.fn, self.tn = (a + b for a, b in zip(
            (self.tp, self.fp, self.fn, self.tn), counts, strict=True))
        self.global_tp, self.global_fp, self.global_fn, self.global_tn = (a + b for a, b in zip(
            (self.global_tp, self.global_fp, self.global_fn, self.global_tn), counts,
            strict=True))

    @staticmethod
    def fscore(tp, fp, fn):
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


@register
class F1(EvalMetric):
    """The F1 score of a binary classifier (predictions: (N, 2) scores); average='macro'
    averages each update's F1, 'micro' computes one F1 over everything seen."""

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        self.average = average
        self.counts = _BinaryCounts()
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        c = self.counts
        for label, pred in zip(labels, preds, strict=True):
            c.update(label, pred, "F1")
        local = c.fscore(c.tp, c.fp, c.fn)
        if self.average == "macro":
            # NOTE: the mean of each update's F1; as in MXNet the counts, global ones too, are
            # cleared after each update, so the global value is that same mean
            self._add(local, 1)
            c.reset()
        else:
            overall = c.fscore(c.global_tp, c.global_fp, c.global_fn)
            self.num_inst = c.tp + c.fp + c.fn + c.tn
            self.global_num_inst = c.global_tp + c.global_fp + c.global_fn + c.global_tn
            self.sum_metric = local * self.num_inst
            self.global_sum_metric = overall * self.global_num_inst

    def reset(self):
        super().reset()
        self.counts.reset()

    def reset_local(self):
        super().reset_local()
        self.counts.reset_local()


# --- regression ---------------------------------------------------------------------------------
class _PerBatch(EvalMetric):
    """A metric that averages one value per (label, pred) pair: MAE, MSE, RMSE (MXNet 1.9)."""

    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            self._add(float(self._measure(_as_columns(_host(label)) - _as_columns(_host(pred)))),
                      1)


@register
class MAE(_PerBatch):
    """The mean absolute error, averaged over updates."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    _measure = staticmethod(lambda diff: numpy.abs(diff).mean())


@register
class MSE(_PerBatch):
    """The mean squared error, averaged over updates."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    _measure = staticmethod(lambda diff: (diff ** 2.0).mean())


@register
class RMSE(_PerBatch):
    """The root mean squared error, averaged over updates."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    _measure = staticmethod(lambda diff: numpy.sqrt((diff ** 2.0).mean()))


@register
@alias("ce")
class CrossEntropy(EvalMetric):
    """The mean of -log(p + eps) of the probability each sample gives its label."""

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            truth, probabilities = _host(label).ravel(), _host(pred)
            if truth.shape[0] != probabilities.shape[0]:
                raise ValueError(f"mx.metric.{type(self).__name__}: {truth.shape[0]} labels for "
                                 f"{probabilities.shape[0]} predictions")
            picked = probabilities[numpy.arange(truth.shape[0]), truth.astype(numpy.int64)]
            self._add(float((-numpy.log(picked + self.eps)).sum()), truth.shape[0])


@register
@alias("nll_loss")
class NegativeLogLikelihood(CrossEntropy):
    """CrossEntropy under MXNet's other name ('nll-loss')."""

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)
