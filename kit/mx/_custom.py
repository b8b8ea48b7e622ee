"""`mx.nd.Custom`: a registered CustomOpProp / CustomOp pair, run as a kit.Function.

Each registered op gets its own kit.Function subclass (named after op_type, frontend
"MXNet-style"), so a CustomOp call is one ordinary graph node. The adapter does what MXNet's
C++ side does (infer shapes and types, preallocate out_data and in_grad, pass req and is_train) and
refuses what MXNet lets through: unwritten outputs, writes into in_data, values whose shape
disagrees with infer_shape, reads of arrays that declare_backward_dependency left out. Errors from
the user's code keep their type and gain the op_type and the phase.
"""

from __future__ import annotations

import contextlib
import inspect

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.function import Function
from kit.grad_mode import STATE
from kit.mx.base import MODE, REPORTED, MXNetError, reported, run, scope
from kit.mx.context import context_of, current_context
from kit.mx.ndarray import Guard, NDArray, variable_slot
from kit.mx.operator import CustomOp, lookup


def _where(op_type, phase):
    return f"mx.nd.Custom(op_type={op_type!r}) {phase}"


@contextlib.contextmanager
def _phase(op_type, phase):
    """Re-raise an error from the user's code as its own type, naming the op and the phase."""
    try:
        yield
    except Exception as exc:
        if getattr(exc, REPORTED, False):
            raise
        message = f"{_where(op_type, phase)}: {type(exc).__name__}: {exc}"
        try:
            new = type(exc)(message)
        except Exception:  # a type whose constructor wants other arguments: annotate it instead
            exc.add_note(message)
            raise reported(exc) from None
        raise reported(new) from exc


class _Call:
    """One mx.nd.Custom call: the Prop, its CustomOp, and what the backward pass needs."""

    __slots__ = (
        "op_type", "prop", "op", "arg_names", "out_names", "aux_names", "deps", "ids",
        "out_shapes", "out_types", "in_shapes", "in_types", "req", "aux", "saved_in",
        "saved_out",
    )


def Custom(*data, **kwargs):  # noqa: N802 - MXNet's name
    """Apply the custom operator registered as `op_type` to positional inputs (args then aux).

    Every other keyword reaches the Prop's __init__ as a string, as in MXNet; `name` is ignored.
    Returns an NDArray, or a list of them for an op with several outputs.
    """
    op_type = kwargs.pop("op_type", None)
    kwargs.pop("name", None)
    if not isinstance(op_type, str):
        raise TypeError(
            "mx.nd.Custom: Required parameter op_type of string is not presented. Fix: "
            "mx.nd.Custom(x, op_type='my_op'), with the name given to mx.operator.register"
        )
    entry = lookup(op_type)
    arrays_as_keywords = sorted(k for k, v in kwargs.items() if isinstance(v, NDArray))
    for k in arrays_as_keywords:
        kwargs.pop(k)
    call = _Call()
    call.op_type = op_type
    call.prop = _make_prop(entry.prop_cls, op_type, kwargs)
    _read_lists(call)
    n_args, n_aux = len(call.arg_names), len(call.aux_names)
    if len(data) != n_args + n_aux or arrays_as_keywords:
        hint = ""
        if arrays_as_keywords:
            hint = (f" {arrays_as_keywords} were passed as keywords: inputs of mx.nd.Custom are "
                    f"positional, mx.nd.Custom(x, op_type={op_type!r}).")
        raise MXNetError(
            f"Operator Custom expects {n_args + n_aux} inputs, but got {len(data)} instead. "
            f"{op_type!r} takes arguments {call.arg_names} then auxiliary states "
            f"{call.aux_names}, in that order.{hint}"
        )
    for i, d in enumerate(data):
        if not isinstance(d, NDArray):
            raise TypeError(
                f"{_where(op_type, 'inputs')}: input {i} is a {type(d).__name__}, expected an "
                f"NDArray. Fix: mx.nd.array(value)"
            )
    tensors = [d._t for d in data]
    if len({backend.device_of(t.data) for t in tensors}) > 1:
        raise MXNetError(
            f"{_where(op_type, 'inputs')}: the inputs are on different devices "
            f"{[str(d.context) for d in data]}. Fix: x.as_in_context(ctx) for one context"
        )
    _infer(call, tensors[:n_args], tensors[n_args:])
    ctx = context_of(tensors[0].data) if tensors else current_context()
    with _phase(op_type, "create_operator"):
        call.op = call.prop.create_operator(ctx, call.in_shapes, call.in_types)
    if not isinstance(call.op, CustomOp):
        raise reported(TypeError(
            f"{_where(op_type, 'create_operator')}: returned {call.op!r}, expected an instance "
            f"of mx.operator.CustomOp. Fix: `return MyOp()` (an instance, not the class)"
        ))
    outputs = run(entry.function.apply, call, *tensors)
    wrapped = [NDArray(t) for t in outputs]
    return wrapped[0] if len(wrapped) == 1 else wrapped


def _make_prop(prop_cls, op_type, kwargs):
    """prop_cls(**kwargs) with every value as a string, as MXNet passes them."""
    strings = {k: str(v) for k, v in kwargs.items()}
    try:
        signature = inspect.signature(prop_cls)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        try:
            signature.bind(**strings)
        except TypeError as exc:
            raise reported(TypeError(
                f"{_where(op_type, 'CustomOpProp.__init__')}: {prop_cls.__name__}.__init__"
                f"{signature} cannot be called with the keyword arguments {strings} ({exc}); "
                f"MXNet passes every extra keyword of mx.nd.Custom to the Prop, as a string, "
                f"and would crash here. Fix: {_init_fix(signature, strings, op_type)}"
            )) from None
    with _phase(op_type, "CustomOpProp.__init__"):
        prop = prop_cls(**strings)
    if not hasattr(prop, "need_top_grad_"):
        raise reported(TypeError(
            f"{_where(op_type, 'CustomOpProp.__init__')}: {prop_cls.__name__}.__init__ did not "
            f"call the base __init__. Fix: super().__init__(need_top_grad=True) (False for a "
            f"loss layer that ignores the gradient from above)"
        ))
    return prop


def _init_fix(signature, strings, op_type):
    """How to make the Prop's __init__ and the keywords of mx.nd.Custom agree."""
    params = signature.parameters.values()
    missing = [p.name for p in params if p.default is p.empty
               and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in strings]
    if missing:
        given = ", ".join(f"{name}=..." for name in missing)
        return f"pass them: mx.nd.Custom(x, op_type={op_type!r}, {given})"
    names = ", ".join(strings)
    first = next(iter(strings))
    return (f"def __init__(self, {names}): and convert each value, e.g. "
            f"self.{first} = float({first})")


def _read_lists(call):
    prop, op_type = call.prop, call.op_type
    for attr, method in (("arg_names", "list_arguments"), ("out_names", "list_outputs"),
                         ("aux_names", "list_auxiliary_states")):
        with _phase(op_type, method):
            names = list(getattr(prop, method)())
        setattr(call, attr, names)
    if not call.out_names:
        raise reported(ValueError(
            f"{_where(op_type, 'list_outputs')}: the op declares no outputs; return at least one "
            f"name, e.g. ['output']"
        ))


def _split(ret, op_type, phase, counts, names):
    """Check what infer_shape / infer_type returned: 2 or 3 lists of the right lengths."""
    if not isinstance(ret, (tuple, list)) or len(ret) not in (2, 3):
        raise reported(ValueError(
            f"{_where(op_type, phase)}: must return 2 or 3 lists (inputs, outputs[, aux]), "
            f"got {ret!r}"
        ))
    parts = list(ret) + ([] if len(ret) == 3 else [None])
    for part, count, what in zip(parts, counts, names, strict=True):
        if part is None and what == "aux":
            continue
        if len(part) != count:
            raise reported(ValueError(
                f"{_where(op_type, phase)}: expecting {count} entries in returned {what} "
                f"{'shapes' if phase == 'infer_shape' else 'types'}, got {len(part)} ({part!r})"
            ))
    return parts


def _infer(call, args, aux):
    """Run infer_shape, infer_type and declare_backward_dependency; check them against the data."""
    prop, op_type = call.prop, call.op_type
    counts = (len(call.arg_names), len(call.out_names), len(call.aux_names))
    names = ("input", "output", "aux")
    with _phase(op_type, "infer_shape"):
        ret = prop.infer_shape([list(t.shape) for t in args])
    ishape, oshape, ashape = _split(ret, op_type, "infer_shape", counts, names)
    given = [(f"argument {call.arg_names[i]!r}", t.shape, s) for i, (t, s) in
             enumerate(zip(args, ishape, strict=True))]
    given += [(f"aux state {call.aux_names[i]!r}", t.shape, s) for i, (t, s) in
              enumerate(zip(aux, ashape or [t.shape for t in aux], strict=True))]
    for what, have, said in given:
        if tuple(int(n) for n in said) != tuple(have):
            raise reported(ValueError(
                f"{_where(op_type, 'infer_shape')}: returned shape {tuple(said)} for {what}, but "
                f"that input has shape {tuple(have)}. Fix: return the input shapes unchanged"
            ))
    call.out_shapes = [tuple(int(n) for n in s) for s in oshape]
    call.in_shapes = [list(t.shape) for t in args] + [list(t.shape) for t in aux]
    with _phase(op_type, "infer_type"):
        ret = prop.infer_type([t.dtype.type for t in args])
    itype, otype, _ = _split(ret, op_type, "infer_type", counts, names)
    for i, (t, said) in enumerate(zip(args, itype, strict=True)):
        if np.dtype(said) != t.dtype:
            raise reported(TypeError(
                f"{_where(op_type, 'infer_type')}: returned dtype {np.dtype(said)} for argument "
                f"{call.arg_names[i]!r}, but that input is {t.dtype}. Fix: convert the input "
                f"with .astype(...) or return its dtype"
            ))
    call.out_types = [np.dtype(t) for t in otype]
    call.in_types = [t.dtype.type for t in args] + [t.dtype.type for t in aux]
    n_in, n_out = counts[0], counts[1]
    call.ids = (list(range(n_out)), list(range(n_out, n_out + n_in)),
                list(range(n_out + n_in, 2 * n_out + n_in)))
    with _phase(op_type, "declare_backward_dependency"):
        call.deps = {int(i) for i in prop.declare_backward_dependency(*call.ids)}


# --- the kit.Function that runs the op ------------------------------------------------------
def _req(tensor, needed):
    """MXNet's req for an input's gradient: 'null', or the variable's grad_req, or 'write'."""
    if not needed:
        return "null"
    slot = variable_slot(tensor) if tensor.grad_fn is None else None
    return slot.req if slot is not None else "write"


def _readonly(tensor, where, keep_graph):
    """An NDArray a CustomOp may read but not write."""
    if not keep_graph:
        data = tensor.data
        if isinstance(data, np.ndarray):
            data = data.view()
            data.flags.writeable = False
        tensor = Tensor(data)
    return NDArray(tensor, Guard(where, True, tensor.shape))


def _buffer(shape, dtype, like, where):
    """A preallocated output (out_data or in_grad), zero-filled, that records being written."""
    xp = backend.get_array_module(like)
    return NDArray(Tensor(xp.zeros(shape, dtype=dtype)), Guard(where, False, shape))


class _Undeclared:
    """Stands for an array that declare_backward_dependency left out: any use is an error."""

    __slots__ = ("_message",)

    def __init__(self, message):
        object.__setattr__(self, "_message", message)

    def _kit_mx_undeclared(self, *args, **kwargs):
        raise reported(MXNetError(self._message))

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self._kit_mx_undeclared()

    def __repr__(self):
        return "<not declared by declare_backward_dependency>"


for _name in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "pow", "rpow",
              "neg", "abs", "getitem", "setitem", "len", "iter", "bool", "float", "int", "lt",
              "le", "gt", "ge", "iadd", "isub", "imul", "itruediv", "matmul", "array"):
    setattr(_Undeclared, f"__{_name}__", _Undeclared._kit_mx_undeclared)
del _name


def _undeclared(call, what, index):
    extra = ""
    if what == "out_grad" and not call.prop.need_top_grad_:
        extra = (" This op's Prop sets need_top_grad=False (a loss layer): its backward must not "
                 "use out_grad; use need_top_grad=True if the gradient from above matters.")
    return _Undeclared(
        f"{_where(call.op_type, 'backward')}: read {what}[{index}], which "
        f"declare_backward_dependency did not declare (it returned {sorted(call.deps)}; the ids "
        f"are out_grad {call.ids[0]}, in_data {call.ids[1]}, out_data {call.ids[2]}), so MXNet "
        f"would hand backward an empty array.{extra} Fix: include it in the list "
        f"declare_backward_dependency returns"
    )


class CustomFunction(Function):
    """The kit.Function behind mx.nd.Custom; one subclass per registered op_type."""

    frontend = "MXNet-style"

    @staticmethod
    def forward(ctx, call, *inputs):
        n_args = len(call.arg_names)
        args, call.aux = inputs[:n_args], inputs[n_args:]
        needs = ctx.needs_input_grad[1 : 1 + n_args]
        call.req = tuple(_req(t, need) for t, need in zip(args, needs, strict=True))
        where = _where(call.op_type, "forward")
        in_data = [_readonly(t, f"{where}: in_data[{i}] ({call.arg_names[i]!r})", False)
                   for i, t in enumerate(args)]
        like = args[0].data if args else np.zeros(0)
        out_data = [
            _buffer(s, d, like, f"{where}: out_data[{j}] ({call.out_names[j]!r})")
            for j, (s, d) in enumerate(zip(call.out_shapes, call.out_types, strict=True))
        ]
        aux = [NDArray(t) for t in call.aux]
        buffers = tuple(out_data)  # the op may rebind items of the list it gets
        with scope(recording=False), _phase(call.op_type, "forward"):
            call.op.forward(is_train=1 if MODE.training else 0, req=["write"] * len(out_data),
                            in_data=in_data, out_data=out_data, aux=aux)
        for buf in buffers:
            if not buf._guard.written:
                raise reported(RuntimeError(
                    f"{buf._guard.where} was never written (MXNet would return uninitialised "
                    f"memory). Fix: self.assign(out_data[i], req[i], value) in forward; "
                    f"rebinding out_data[i] = value does not write into the output"
                ))
        outputs = tuple(buf._t for buf in buffers)
        n_out = len(outputs)
        call.saved_in = [i for i in range(n_args) if n_out + i in call.deps]
        call.saved_out = [j for j in range(n_out) if n_out + n_args + j in call.deps]
        ctx.save_for_backward(*[args[i] for i in call.saved_in],
                              *[outputs[j] for j in call.saved_out])
        ctx.call = call
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        call = ctx.call
        saved = iter(ctx.saved_tensors)  # checks that nothing saved was modified in place
        keep = STATE.enabled  # True under create_graph: backward's mx.nd ops are recorded
        n_out, n_args = len(call.out_names), len(call.arg_names)
        where = _where(call.op_type, "backward")
        in_map = {i: next(saved) for i in call.saved_in}
        out_map = {j: next(saved) for j in call.saved_out}
        out_grad = [
            _readonly(g, f"{where}: out_grad[{j}]", keep) if j in call.deps
            else _undeclared(call, "out_grad", j) for j, g in enumerate(grads)
        ]
        in_data = [
            _readonly(in_map[i], f"{where}: in_data[{i}] ({call.arg_names[i]!r})", keep)
            if i in in_map else _undeclared(call, "in_data", i) for i in range(n_args)
        ]
        out_data = [
            _readonly(out_map[j], f"{where}: out_data[{j}] ({call.out_names[j]!r})", keep)
            if j in out_map else _undeclared(call, "out_data", j) for j in range(n_out)
        ]
        like = grads[0].data
        in_grad = [
            _buffer(tuple(call.in_shapes[i]), np.dtype(call.in_types[i]), like,
                    f"{where}: in_grad[{i}] ({call.arg_names[i]!r})") for i in range(n_args)
        ]
        aux = [NDArray(t) for t in call.aux]
        buffers = tuple(in_grad)
        with scope(recording=keep), _phase(call.op_type, "backward"):
            call.op.backward(req=list(call.req), out_grad=out_grad, in_data=in_data,
                             out_data=out_data, in_grad=in_grad, aux=aux)
        sources = [a._t for a in out_grad + in_data + out_data
                   if isinstance(a, NDArray) and a._t.requires_grad]
        result = []
        for buf, req in zip(buffers, call.req, strict=True):
            if req == "null":
                result.append(None)
                continue
            if not buf._guard.written:
                raise reported(RuntimeError(
                    f"{buf._guard.where} was never written, although req is {req!r} (MXNet would "
                    f"leave a zero gradient). Fix: self.assign(in_grad[i], req[i], gradient) in "
                    f"backward for every input"
                ))
            g = buf._t
            if keep and sources and not g.requires_grad:
                g = _once_differentiable(g, sources, call.op_type)
            result.append(g)
        return (None, *result, *([None] * len(call.aux)))


def _once_differentiable(g, sources, op_type):
    """A gradient computed outside kit's ops (NumPy) under create_graph: differentiating it
    again raises, instead of silently missing terms."""
    from kit.ops._record import record

    def rule(node, gy):
        raise RuntimeError(
            f"{_where(op_type, 'backward')}: its in_grad was computed outside kit's operations "
            f"(NumPy, asnumpy, mx.nd.array of a NumPy result), so it cannot be differentiated "
            f"again. Fix: write backward with mx.nd operations on out_grad/in_data/out_data; "
            f"they are recorded under create_graph=True"
        )

    return record("custom_numpy_backward", rule, g.data, tuple(sources))


def make_function(op_type):
    """The kit.Function subclass for one registered op (its graph nodes are named op_type)."""
    return type(op_type, (CustomFunction,), {
        "__qualname__": op_type, "__module__": __name__,
        "__doc__": f"kit.Function running the MXNet-style custom operator {op_type!r}.",
    })
