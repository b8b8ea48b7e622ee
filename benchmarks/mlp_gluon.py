"""The MLP step of benchmarks/mlp.py written as MXNet gluon code writes it: `nn.Dense` layers in
a `HybridSequential`, `SoftmaxCrossEntropyLoss`, `autograd.record()`, `loss.backward()` and
`Trainer.step(batch_size)` with SGD.

The loss is per sample, so backward differentiates its sum and step(batch) divides by the batch
size: the same update as the bare step's mean loss. Compared with the bare-tensor step
(mlp.kit_step_fn), the target is at most 5% over it. A Dense stores W transposed, (out, in).
"""

from __future__ import annotations

import numpy as np

from benchmarks import mlp


def gluon_step_fn(x, y, params):
    """One step with kit.mx.gluon: forward under record, backward, trainer.step(batch)."""
    import kit.mx as mx
    from kit.mx import autograd, gluon

    net = gluon.nn.HybridSequential()
    for i, (w, _) in enumerate(params):
        net.add(gluon.nn.Dense(w.shape[1], in_units=w.shape[0],
                               activation="relu" if i < len(params) - 1 else None))
    net.initialize()
    dense = list(net)
    for layer, (w, b) in zip(dense, params, strict=True):
        layer.weight.set_data(np.ascontiguousarray(w.T))
        layer.bias.set_data(b)
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": mlp.LR})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    xs, ys = mx.nd.array(x), mx.nd.array(y)
    batch = x.shape[0]
    # NOTE: views of the weights, made once (the Trainer updates them in place), as the bare
    # step returns its live arrays: returning the numbers must not time extra copies.
    views = [a for layer in dense for a in (layer.weight.data().tensor.detach().numpy().T,
                                            layer.bias.data().tensor.detach().numpy())]

    def step():
        with autograd.record():
            loss = loss_fn(net(xs), ys)
        loss.backward()
        trainer.step(batch)
        # the mean of the per-sample losses is the bare step's loss (read without a copy)
        return float(loss.tensor.detach().numpy().mean()), views

    return step


def impls(batch=64, sizes=(784, 256, 256, 10)):
    """{name: step}: the gluon step ("kit"), the bare kit step ("bare") and NumPy's, all from
    the same start."""
    x, y, params = mlp.make_data(batch, sizes)
    return {
        "kit": gluon_step_fn(x, y, params),
        "bare": mlp.kit_step_fn(x, y, params),
        "numpy": mlp.numpy_step_fn(x, y, params),
    }
