"""`mx.autograd.Function`: MXNet 1.x's imperative custom function, run as a kit.Function.

The user subclasses Function with `forward(self, *inputs)` and `backward(self, *output_grads)`,
makes an instance and calls it once: `y = MyFn()(x)`. forward runs with recording paused;
inside autograd.record() the call becomes one kit graph node (named after the class) whose
backward calls the instance's backward, which returns one NDArray per forward input.
"""

from __future__ import annotations

from kit.function import Function as KitFunction
from kit.function import refuse_second_derivative
from kit.grad_mode import STATE
from kit.mx.base import error, reported, run, scope, user_errors
from kit.mx.ndarray import NDArray


def _where(fn, phase):
    return f"mx.autograd.Function {type(fn).__name__}.{phase}"


def _as_tuple(value, fn, phase, what):
    """forward's outputs or backward's gradients: an NDArray, or a tuple/list of NDArrays."""
    values = (value,) if isinstance(value, NDArray) else value
    if not isinstance(values, (tuple, list)) or not values or not all(
            isinstance(v, NDArray) for v in values):
        raise reported(error(TypeError, (
            f"{_where(fn, phase)}: must return {what} as NDArrays (one NDArray, or a tuple of "
            f"them), got {value!r}. Fix: build them with mx.nd operations or mx.nd.array(...)"
        )))
    return tuple(values)


class _Bridge(KitFunction):
    """The kit.Function behind every mx.autograd.Function subclass (one subclass per class)."""

    frontend = "MXNet-style"

    @staticmethod
    def forward(ctx, fn, *inputs):
        with scope(recording=False), user_errors(_where(fn, "forward")):
            returned = fn.forward(*[NDArray(t) for t in inputs])
        outputs = _as_tuple(returned, fn, "forward", "its outputs")
        ctx.fn, fn._container = fn, type(returned)
        ctx.inputs = inputs  # what a NumPy-computed gradient depends on (for the refusal below)
        ctx.shapes = [t.shape for t in inputs]
        return tuple(o._t for o in outputs)

    @staticmethod
    def backward(ctx, *grads):
        fn = ctx.fn
        keep = STATE.enabled  # True under create_graph: backward's mx.nd ops are recorded
        with scope(recording=keep), user_errors(_where(fn, "backward")):
            returned = fn.backward(*[NDArray(g) for g in grads])
        found = _as_tuple(returned, fn, "backward", "one gradient per forward input")
        if len(found) != len(ctx.shapes):
            raise reported(error(ValueError, (
                f"{_where(fn, 'backward')} must return exactly the same number of NDArrays as "
                f"the number of NDArray arguments to forward: expecting {len(ctx.shapes)}, got "
                f"{len(found)}"
            )))
        result = []
        for i, (g, shape) in enumerate(zip(found, ctx.shapes, strict=True)):
            if g.shape != tuple(shape):
                raise reported(error(ValueError, (
                    f"{_where(fn, 'backward')}: gradient {i} has shape {g.shape}, but forward "
                    f"input {i} has shape {tuple(shape)}. Fix: return one gradient per input, "
                    f"each of its input's shape"
                )))
            t = g._t
            if keep and not t.requires_grad:
                sources = [x for x in (*ctx.inputs, *grads) if x.requires_grad]
                t = refuse_second_derivative(t, sources, (
                    f"{_where(fn, 'backward')}: its gradients were computed outside kit's "
                    f"operations (NumPy, asnumpy), so they cannot be differentiated again. Fix: "
                    f"write backward with mx.nd operations"
                ))
            result.append(t)
        return (None, *result)


_BRIDGES = {}  # Function subclass -> its kit.Function subclass (graph nodes named after it)


def _bridge(cls):
    bridge = _BRIDGES.get(cls)
    if bridge is None:
        bridge = type(cls.__name__, (_Bridge,), {
            "__qualname__": cls.__qualname__, "__module__": __name__,
            "__doc__": f"kit.Function running the mx.autograd.Function {cls.__name__}.",
        })
        _BRIDGES[cls] = bridge
    return bridge


class Function:
    """A custom differentiable function, MXNet 1.x style: subclass, make an instance, call it.

    >>> import kit.mx as mx
    >>> class Sigmoid(mx.autograd.Function):
    ...     def forward(self, x):
    ...         y = 1 / (1 + mx.nd.exp(-x))
    ...         self.save_for_backward(y)
    ...         return y
    ...     def backward(self, dy):
    ...         y, = self.saved_tensors
    ...         return dy * y * (1 - y)
    >>> x = mx.nd.array([0.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = Sigmoid()(x)
    >>> y.backward(); x.grad.asnumpy()
    array([0.25], dtype=float32)
    """

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        """Keep arrays for backward, in self.saved_tensors."""
        self.saved_tensors = args

    def __call__(self, *inputs):
        name = type(self).__name__
        if getattr(self, "_used", None) is None:
            raise TypeError(
                f"mx.autograd.Function {name}: __init__ did not call the base __init__. Fix: "
                f"super().__init__() in {name}.__init__"
            )
        if self._used:
            raise error(AssertionError, (
                f"mx.autograd.Function {name}: Each Function instance can only be called once. "
                f"Please create another instance: {name}()(x)"
            ))
        for i, x in enumerate(inputs):
            if not isinstance(x, NDArray):
                raise TypeError(
                    f"mx.autograd.Function {name}: input {i} is a {type(x).__name__}; every "
                    f"input must be an NDArray. Fix: mx.nd.array(value)"
                )
        self._used = True
        outputs = run(_bridge(type(self)).apply, self, *[x._t for x in inputs])
        arrays = [NDArray(t) for t in (outputs if isinstance(outputs, tuple) else (outputs,))]
        if self._container is NDArray:
            return arrays[0]
        return self._container(arrays)

    def forward(self, *inputs):
        """Compute the outputs from NDArray inputs (recording is paused here)."""
        raise NotImplementedError(
            f"{type(self).__name__} must define forward(self, *inputs), returning NDArrays"
        )

    def backward(self, *output_grads):
        """Gradients of the inputs from the gradients of the outputs: one NDArray per input."""
        raise NotImplementedError(
            f"{type(self).__name__} must define backward(self, *output_grads), returning one "
            f"NDArray per forward input"
        )
