"""`kit.Function`: the one extension contract, PyTorch's autograd.Function.

A Function's call becomes the same kind of graph node as a built-in op (a `FunctionNode`), so the
engine, `kit.grad`, hooks and kit.viz treat it like any other. Both of PyTorch's forms work:
`forward(ctx, *args)`, or `forward(*args)` plus `setup_context(ctx, inputs, output)`.

The ctx is in kit/_function_ctx.py; binding apply's arguments in kit/_function_call.py.
"""

from __future__ import annotations

import functools
import inspect
import sys

from kit import backend
from kit._anomaly import capture_stack
from kit._function_call import bind, corrected_line
from kit._function_ctx import FunctionCtx
from kit._tensor import Tensor, bump_version, version_counter
from kit.engine import FREED, NO_EDGE, Node, SavedOutput
from kit.grad_mode import STATE, no_grad
from kit.ops._vmap import VMAP
from kit.saved_tensors import pack_node

__all__ = ["Function", "FunctionCtx", "FunctionNode", "once_differentiable"]


class FunctionNode(Node):
    """The graph node of one call to a Function."""

    __slots__ = (
        "ctx", "function", "n_given", "input_meta", "non_differentiable", "xp",
    )
    kind = "custom"

    def __init__(self, function, ctx, edges, inputs, outputs, given):
        meta = tuple((o.shape, o.dtype) if isinstance(o, Tensor) else None for o in outputs)
        super().__init__(function.__name__, None, edges, (), (), None, meta)
        self.ctx = ctx
        self.function = function
        self.n_given = given  # gradients backward must return at least (see bind)
        # (shape, dtype) per input, None for non-tensors: jvp gets zeros for a float input
        # that has no tangent, as in PyTorch
        self.input_meta = tuple(
            (a.shape, a.dtype) if isinstance(a, Tensor) else None for a in inputs
        )
        self.out_data = tuple(o._data if isinstance(o, Tensor) else None for o in outputs)
        # the outputs' array module: zeros for the gradients of unused outputs
        self.xp = backend.get_array_module(*(d for d in self.out_data if d is not None))
        self.non_differentiable = frozenset()  # indices of outputs marked non-differentiable

    @property
    def input_names(self):
        """forward's parameter name per input, non-tensors marked: for error messages only, so
        it is worked out (with inspect) when one is raised, not on every call."""
        return _input_names(self.function, self.input_meta)

    @property
    def frontend(self):
        return getattr(self.function, "frontend", "PyTorch-style")

    @property
    def n_inputs(self):
        return len(self.next_functions)

    def name(self) -> str:
        return f"{self.function.__name__}Backward"

    @property
    def saved_tensors(self):
        """PyTorch's `y.grad_fn.saved_tensors`: what forward saved (an error once freed)."""
        return self.ctx.saved_tensors

    def _saved_names(self):
        return tuple(f"saved_tensors[{i}]" for i in range(len(self.saved)))

    def __getattr__(self, name):
        # PyTorch's grad_fn of a custom Function is its ctx: `y.grad_fn.k` reads ctx.k.
        try:
            return getattr(object.__getattribute__(self, "ctx"), name)
        except AttributeError:
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}"
            ) from None

    def apply(self, grads, differentiable):
        through_jvp = STATE.jvp_backward  # set while kit.func.jvp records (_function_jvp.py)
        if through_jvp is not None and differentiable:
            return through_jvp(self, grads)  # kit.func.jvp is recording this backward
        return self.run_backward(grads, differentiable)

    def run_backward(self, grads, differentiable):
        """The Function's backward on the gradients of its outputs (the engine's step)."""
        ctx = self.ctx
        if self.saved is FREED:
            return ctx.saved_tensors  # raises the "second time" error
        wrapped = []
        for g, meta in zip(grads, self.output_meta, strict=True):
            if g is None:
                if ctx.materialize_grads and meta is not None:
                    g = self.xp.zeros(meta[0], meta[1])
                else:
                    wrapped.append(None)
                    continue
            wrapped.append(g if isinstance(g, Tensor) else Tensor(g))
        backward = _backward_of(self.function)
        result = backward(ctx, *wrapped)
        return self._check(result, differentiable)

    def _check(self, result, differentiable):
        result = result if isinstance(result, tuple) else (result,)
        name, n = self.name(), self.n_inputs
        if len(result) < self.n_given:
            raise RuntimeError(
                f"function {name} returned an incorrect number of gradients (expected "
                f"{self.n_given}, got {len(result)}). backward must return one gradient per "
                f"forward input, in order: {self._inputs_text()}."
            )
        result = result + (None,) * (n - len(result))  # defaults the caller did not pass
        for i, g in enumerate(result[n:], start=n):
            if g is not None:
                raise RuntimeError(
                    f"function {name} returned an incorrect number of gradients (expected {n}, got "
                    f"{len(result)}): the extra gradient at index {i} must be None"
                )
        out = []
        for i, g in enumerate(result[:n]):
            if g is None:
                out.append(None)
                continue
            if not isinstance(g, Tensor):
                raise RuntimeError(
                    f"function {name} returned a gradient of type {type(g).__name__} at index "
                    f"{i} (for input {self.input_names[i]}): expected Tensor or None (got "
                    f"{type(g).__name__}). Fix: return a kit Tensor, e.g. kit.tensor(value)"
                )
            if not self.next_functions[i] and not self.ctx.needs_input_grad[i]:
                if self.input_meta[i] is None:
                    raise RuntimeError(
                        f"function {name} returned a gradient different than None at position "
                        f"{i}, but the corresponding forward input ({self.input_names[i]}) is not "
                        f"a Tensor: return None there"
                    )
                out.append(None)
                continue
            out.append(g if differentiable else g._data)
        return out

    def _inputs_text(self):
        needs = self.ctx.needs_input_grad
        parts = []
        for i, label in enumerate(self.input_names):
            if label.endswith("(not a tensor)"):
                parts.append(f"[{i}] {label} -> None")
            else:
                parts.append(f"[{i}] {label}" + ("" if needs[i] else " (may be None)"))
        return ", ".join(parts)


def _input_names(function, input_meta):
    try:
        params = list(inspect.signature(function.forward).parameters)
    except (TypeError, ValueError):
        params = []
    if params and not _separate_form(function) and params[0] in ("ctx", "self"):
        params = params[1:]
    names = []
    for i, meta in enumerate(input_meta):
        label = params[i] if i < len(params) and not params[i].startswith("*") else f"arg{i}"
        names.append(label if meta is not None else f"{label} (not a tensor)")
    return names


def _separate_form(cls):
    return cls.setup_context is not Function.setup_context


def _backward_of(cls):
    has_backward = cls.backward is not Function.backward
    has_vjp = cls.vjp is not Function.vjp
    if has_backward and has_vjp:
        raise RuntimeError(
            f"{cls.__name__}: implementing both 'backward' and 'vjp' for a custom Function is "
            f"not allowed. You should only implement one of them."
        )
    if not (has_backward or has_vjp):
        raise NotImplementedError(
            f"You must implement either the backward or vjp method for your custom "
            f"autograd.Function {cls.__name__} to use it with backward mode AD."
        )
    return cls.backward if has_backward else cls.vjp


class Function:
    """Base class for custom differentiable operations (PyTorch's autograd.Function).

    >>> import kit
    >>> class Square(kit.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * g
    >>> x = kit.tensor([3.0], requires_grad=True)
    >>> Square.apply(x).sum().backward(); x.grad
    tensor([6.])
    """

    frontend = "PyTorch-style"
    generate_vmap_rule = False

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        cls = type(self).__name__
        line = corrected_line(sys._getframe(1), self) or f"{cls}.apply(...)"
        raise RuntimeError(
            f"Legacy autograd function with non-static forward method is deprecated. Please use "
            f"new-style autograd function with static forward method. You called an instance of "
            f"{cls}; a Function is never instantiated, call its class's apply instead:\n"
            f"    {line}"
        )

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError

    @staticmethod
    def vjp(ctx, *grad_outputs):
        raise NotImplementedError

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError(
            "To use autograd.Function with vmap, you must either override the vmap staticmethod "
            "or set generate_vmap_rule=True."
        )

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        if VMAP.transforms:  # inside kit.func transforms (vmap, grad, ...): kit.func routes it
            return VMAP.function(cls, args, kwargs)
        separate = _separate_form(cls)
        inputs, given, args, kwargs = bind(cls, separate, args, kwargs)
        ctx = FunctionCtx()
        recording = STATE.enabled and any(
            isinstance(a, Tensor) and a.requires_grad for a in inputs
        )
        object.__setattr__(ctx, "needs_input_grad", tuple(
            recording and isinstance(a, Tensor) and a.requires_grad for a in inputs
        ))
        with no_grad():
            if separate:
                output = cls.forward(*args, **kwargs)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        if separate:
            cls.setup_context(ctx, inputs, output)
        return _wrap_outputs(cls, ctx, inputs, output, recording, given)


def _wrap_outputs(cls, ctx, inputs, output, recording, given):
    single = not isinstance(output, tuple)
    outputs = (output,) if single else output
    dirty = ctx._dirty
    non_diff = ctx._non_differentiable
    returned = [o for o in outputs if isinstance(o, Tensor)]
    for t in dirty:
        if not any(t is o for o in returned):
            raise RuntimeError(
                f"{cls.__name__}: some elements marked as dirty during the forward method were not "
                f"returned as output. The inputs that are modified inplace must all be outputs of "
                f"the Function."
            )
        if recording and t.grad_fn is None and t.requires_grad:
            raise RuntimeError(
                f"{cls.__name__}: a leaf Variable that requires grad has been used in an in-place "
                f"operation (it was passed to ctx.mark_dirty). Fix: pass a non-leaf, e.g. "
                f"x.clone(), or run it under kit.no_grad()"
            )
    final = []
    for o in outputs:
        if isinstance(o, Tensor):
            if any(o is t for t in dirty):
                bump_version(o)
            elif any(o is a for a in inputs):
                alias = Tensor(o._data)  # an input returned unchanged is a new (view) tensor
                alias._vc = version_counter(o)
                o = alias
        final.append(o)
    if recording:
        edges = tuple(
            (a._edge or a._leaf_edge()) if isinstance(a, Tensor) and a.requires_grad else NO_EDGE
            for a in inputs
        )
        node = FunctionNode(cls, ctx, edges, inputs, final, given)
        if STATE.anomaly:
            capture_stack(node, 2)  # _wrap_outputs and apply
        object.__setattr__(ctx, "_node", node)
        for i, o in enumerate(final):
            # NOTE: an integer or bool output has no gradient even unmarked (as in PyTorch)
            if (isinstance(o, Tensor) and o._data.dtype.kind in "fc"
                    and not any(o is t for t in non_diff)):
                o._rg = True
                o.grad_fn, o._nr, o._edge = node, i, (node, i)
            elif isinstance(o, Tensor):
                o._rg = False
                node.non_differentiable |= {i}
        # What ctx saved goes onto the node, kept and checked as a built-in op's saved values are
        # (an output as a SavedOutput marker: no reference cycle through the output Tensor).
        node.saved = tuple(mark_output(t, final) for t in ctx._saved)
        node.versions = tuple(-1 if t is None else t._vc[0] for t in ctx._saved)
        object.__setattr__(ctx, "_saved", ())  # the node holds them now, and frees them
        node.out_vc = tuple(version_counter(o) if isinstance(o, Tensor) else None for o in final)
        if STATE.saved_hooks is not None and node.saved:
            pack_node(node, final)
        if ctx._saved_forward:
            object.__setattr__(ctx, "_forward_versions", tuple(
                -1 if t is None else t._vc[0] for t in ctx._saved_forward))
            object.__setattr__(ctx, "_saved_forward", tuple(
                mark_output(t, final) for t in ctx._saved_forward))
        # The node keeps the array of an output only where a marker refers to it: as in
        # PyTorch, an output nothing saved is freed with its Tensor.
        kept = {v.index for v in (*node.saved, *ctx._saved_forward) if type(v) is SavedOutput}
        node.out_data = tuple(d if i in kept else None for i, d in enumerate(node.out_data))
    return final[0] if single else tuple(final)


def mark_output(t, outputs):
    """A saved tensor that is one of the outputs becomes a SavedOutput marker."""
    for i, o in enumerate(outputs):
        if t is o:
            return SavedOutput(i)
    return t


def once_differentiable(backward):
    """Mark a backward that is not itself differentiable (uses NumPy, say): a double backward
    through it raises a clear error instead of giving a wrong answer."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with no_grad():
            result = backward(ctx, *grads)
        if not STATE.enabled:
            return result
        # NOTE: PyTorch checks only the incoming gradients, so a double backward that depends on
        # the saved tensors alone silently loses that term (the result has no grad_fn). kit
        # also looks at the saved tensors and raises instead.
        saved = ctx._saved_sources() if isinstance(ctx, FunctionCtx) and ctx._has_saved() else ()
        # under kit.func.vmap (jacrev, hessian) values are BatchedTensors: mark the physical ones
        from kit.func._batched import BatchedTensor, physical
        sources = tuple(
            physical(t) for t in (*grads, *saved) if isinstance(t, Tensor) and t.requires_grad
        )
        if not sources:
            return result
        node = ctx._node if isinstance(ctx, FunctionCtx) else None
        name = node.function.__name__ if node is not None else backward.__qualname__

        message = (
            f"trying to differentiate twice a function that was marked with @once_differentiable "
            f"({name}). Fix: write its backward with kit operations (no NumPy) and drop the "
            f"decorator, or do not ask for a higher-order gradient through it (a Function with a "
            f"jvp staticmethod gets second derivatives from jacfwd(jacfwd(f)), which never "
            f"differentiates backward)"
        )

        def mark(r):
            if type(r) is BatchedTensor:
                return BatchedTensor(mark(r.value), r.levels)
            return refuse_second_derivative(r, sources, message)

        results = result if isinstance(result, tuple) else (result,)
        wrapped = tuple(mark(r) if isinstance(r, Tensor) else r for r in results)
        return wrapped if isinstance(result, tuple) else wrapped[0]

    return wrapper


def refuse_second_derivative(value, sources, message):
    """`value`, computed without recording (NumPy, no_grad), as a node that depends on `sources`
    and raises RuntimeError(message) if anything differentiates through it: a double backward
    fails loudly instead of silently missing terms. Used by @once_differentiable and kit.mx."""
    from kit.ops._record import record

    return record(
        "once_differentiable", _raise_message, value._data, tuple(sources), params=message
    )


def _raise_message(node, g):
    raise RuntimeError(node.params)
