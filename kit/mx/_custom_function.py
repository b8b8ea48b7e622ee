"""The kit.Function that runs an mx.nd.Custom op: buffers, req, and the guards on what the
op's forward and backward may read and write (see kit/mx/_custom.py for the whole contract)."""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._modes import STATE
from kit._tensor import Tensor
from kit.function import Function, refuse_second_derivative
from kit.mx._custom import describe, user_code
from kit.mx.base import MXNetError, reported, scope
from kit.mx.ndarray import Guard, NDArray, variable_slot


def _req(tensor, needed):
    """MXNet's req for an input's gradient: 'null', or the variable's grad_req, or 'write'."""
    if not needed:
        return "null"
    slot = variable_slot(tensor) if tensor.grad_fn is None else None
    return slot.req if slot is not None else "write"


def _readonly(tensor, where, keep_graph):
    """An NDArray a CustomOp may read but not write."""
    if not keep_graph:
        data = tensor._data
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
        f"{describe(call.op_type, 'backward')}: read {what}[{index}], which "
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
        where = describe(call.op_type, "forward")
        in_data = [_readonly(t, f"{where}: in_data[{i}] ({call.arg_names[i]!r})", False)
                   for i, t in enumerate(args)]
        like = args[0]._data if args else np.zeros(0)
        out_data = [
            _buffer(s, d, like, f"{where}: out_data[{j}] ({call.out_names[j]!r})")
            for j, (s, d) in enumerate(zip(call.out_shapes, call.out_types, strict=True))
        ]
        aux = [NDArray(t) for t in call.aux]
        buffers = tuple(out_data)  # the op may rebind items of the list it gets
        with scope(recording=False), user_code(call.op_type, "forward"):
            call.op.forward(is_train=1 if STATE.training else 0, req=["write"] * len(out_data),
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
        where = describe(call.op_type, "backward")
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
        like = grads[0]._data
        in_grad = [
            _buffer(tuple(call.in_shapes[i]), np.dtype(call.in_types[i]), like,
                    f"{where}: in_grad[{i}] ({call.arg_names[i]!r})") for i in range(n_args)
        ]
        aux = [NDArray(t) for t in call.aux]
        buffers = tuple(in_grad)
        with scope(recording=keep), user_code(call.op_type, "backward"):
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
                g = refuse_second_derivative(g, sources, (
                    f"{describe(call.op_type, 'backward')}: its in_grad was computed outside "
                    f"kit's operations (NumPy, asnumpy, mx.nd.array of a NumPy result), so it "
                    f"cannot be differentiated again. Fix: write backward with mx.nd operations "
                    f"on out_grad/in_data/out_data; they are recorded under create_graph=True"
                ))
            result.append(g)
        return (None, *result, *([None] * len(call.aux)))


def make_function(op_type):
    """The kit.Function subclass for one registered op (its graph nodes are named op_type)."""
    return type(op_type, (CustomFunction,), {
        "__qualname__": op_type, "__module__": __name__,
        "__doc__": f"kit.Function running the MXNet-style custom operator {op_type!r}.",
    })
