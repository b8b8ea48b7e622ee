"""`import kit.mx as mx`: a faithful subset of MXNet 1.x on kit's engine.

`mx.nd` (NDArray, array creation, common ops, Custom), `mx.autograd` (record, pause, backward,
grad, ...), `mx.operator` (CustomOp, CustomOpProp, register), `mx.cpu()`, `mx.gpu()`,
`mx.context`, `mx.gluon` (Block, layers, losses, Trainer), `mx.optimizer`, `mx.init`,
`mx.profiler` (set_config, set_state, dumps, dump). A
CustomOp call becomes an ordinary kit graph node, so kit.grad, kit.viz and higher-order
gradients work through it.

>>> import kit.mx as mx
>>> x = mx.nd.array([1, 2, 3]); x.attach_grad()
>>> with mx.autograd.record():
...     y = (x * x).sum()
>>> y.backward(); x.grad.asnumpy()
array([2., 4., 6.], dtype=float32)
"""

# NOTE: operator first: registering the base op at import needs kit.mx._custom_function,
# which needs it.
from kit.mx import operator  # isort: skip
from kit.mx import autograd, base, context, gluon, init, metric, nd, optimizer, profiler, random
from kit.mx._out_of_scope import io, kv, mod, sym, symbol
from kit.mx.base import MXNetError
from kit.mx.context import Context, cpu, current_context, gpu
from kit.mx.ndarray import NDArray

initializer = init  # MXNet has both names

__all__ = [
    "Context", "MXNetError", "NDArray", "autograd", "base", "context", "cpu", "current_context",
    "gluon", "gpu", "init", "initializer", "io", "kv", "metric", "mod", "nd", "operator",
    "optimizer", "profiler", "random", "sym", "symbol",
]
