"""`mx.nd.Custom`: a registered CustomOpProp / CustomOp pair, run as a kit.Function.

Each registered op gets its own kit.Function subclass (named after op_type, frontend
"MXNet-style"; kit/mx/_custom_function.py), so a CustomOp call is one ordinary graph node. This
module reads the Prop (arguments, infer_shape / infer_type, dependencies); the Function does what
MXNet's C++ side does at run time (preallocate out_data and in_grad, pass req and is_train). Both
refuse what MXNet lets through: unwritten outputs, writes into in_data, values whose shape
disagrees with infer_shape, reads of arrays that declare_backward_dependency left out. Errors from
the user's code keep their type and gain the op_type and the phase.
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit.mx.base import MXNetError, error, reported, run, user_errors
from kit.mx.context import context_of, current_context
from kit.mx.ndarray import NDArray
from kit.mx.operator import CustomOp, lookup


def describe(op_type, phase):
    """Where in a custom op something happened: "mx.nd.Custom(op_type='x') forward"."""
    return f"mx.nd.Custom(op_type={op_type!r}) {phase}"


def user_code(op_type, phase):
    """Re-raise an error from the user's code naming the op and the phase, as its own type that
    is also an MXNetError (what MXNet raises), with the user's line still in the traceback."""
    return user_errors(describe(op_type, phase))


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
    call.prop = _make_prop(entry, op_type, kwargs)
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
                f"{describe(op_type, 'inputs')}: input {i} is a {type(d).__name__}, expected an "
                f"NDArray. Fix: mx.nd.array(value)"
            )
    tensors = [d._t for d in data]
    if len({backend.device_of(t._data) for t in tensors}) > 1:
        raise MXNetError(
            f"{describe(op_type, 'inputs')}: the inputs are on different devices "
            f"{[str(d.context) for d in data]}. Fix: x.as_in_context(ctx) for one context"
        )
    _infer(call, tensors[:n_args], tensors[n_args:])
    ctx = context_of(tensors[0]._data) if tensors else current_context()
    with user_code(op_type, "create_operator"):
        call.op = call.prop.create_operator(ctx, call.in_shapes, call.in_types)
    if not isinstance(call.op, CustomOp):
        raise reported(error(TypeError, (
            f"{describe(op_type, 'create_operator')}: returned {call.op!r}, expected an instance "
            f"of mx.operator.CustomOp. Fix: `return MyOp()` (an instance, not the class)"
        )))
    outputs = run(entry.function.apply, call, *tensors)
    wrapped = [NDArray(t) for t in outputs]
    return wrapped[0] if len(wrapped) == 1 else wrapped


def _make_prop(entry, op_type, kwargs):
    """entry.prop_cls(**kwargs) with every value as a string, as MXNet passes them."""
    prop_cls, signature = entry.prop_cls, entry.signature
    strings = {k: str(v) for k, v in kwargs.items()}
    if signature is not None:
        try:
            signature.bind(**strings)
        except TypeError as exc:
            raise reported(error(TypeError, (
                f"{describe(op_type, 'CustomOpProp.__init__')}: {prop_cls.__name__}.__init__"
                f"{signature} cannot be called with the keyword arguments {strings} ({exc}); "
                f"MXNet passes every extra keyword of mx.nd.Custom to the Prop, as a string, "
                f"and would crash here. Fix: {_init_fix(signature, strings, op_type)}"
            ))) from None
    with user_code(op_type, "CustomOpProp.__init__"):
        prop = prop_cls(**strings)
    if not hasattr(prop, "need_top_grad_"):
        raise reported(error(TypeError, (
            f"{describe(op_type, 'CustomOpProp.__init__')}: {prop_cls.__name__}.__init__ did not "
            f"call the base __init__. Fix: super().__init__(need_top_grad=True) (False for a "
            f"loss layer that ignores the gradient from above)"
        )))
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


def _bad(op_type, phase, message, kind=ValueError):
    """An error naming the op and the Prop method whose return value is malformed."""
    return reported(error(kind, f"{describe(op_type, phase)}: {message}"))


def _names(value, op_type, method):
    """What list_arguments / list_outputs / list_auxiliary_states returned: a list of str."""
    if isinstance(value, str):
        raise _bad(op_type, method, (
            f"returned the string {value!r}; it must return a list of names. Fix: return "
            f"[{value!r}]"
        ), TypeError)
    if not isinstance(value, (list, tuple)) or not all(isinstance(n, str) for n in value):
        raise _bad(op_type, method, (
            f"must return a list of names (strings), got {value!r}. Fix: e.g. return ['data']"
        ), TypeError)
    repeated = sorted({n for n in value if list(value).count(n) > 1})
    if repeated:
        raise _bad(op_type, method, f"names {repeated} appear more than once in {list(value)}")
    return list(value)


def _read_lists(call):
    prop, op_type = call.prop, call.op_type
    for attr, method in (("arg_names", "list_arguments"), ("out_names", "list_outputs"),
                         ("aux_names", "list_auxiliary_states")):
        with user_code(op_type, method):
            value = getattr(prop, method)()
        setattr(call, attr, _names(value, op_type, method))
    if not call.out_names:
        raise _bad(op_type, "list_outputs", (
            "the op declares no outputs; return at least one name, e.g. ['output']"
        ))


_PARTS = ("input", "output", "aux")


def _split(ret, op_type, phase, counts):
    """Check what infer_shape / infer_type returned: 2 or 3 lists of the right lengths."""
    if not isinstance(ret, (tuple, list)) or len(ret) not in (2, 3):
        raise _bad(op_type, phase, (
            f"must return 2 or 3 lists (inputs, outputs[, aux]), got {ret!r}"
        ))
    parts = list(ret) + ([] if len(ret) == 3 else [None])
    kind = "shapes" if phase == "infer_shape" else "types"
    for part, count, what in zip(parts, counts, _PARTS, strict=True):
        if part is None and what == "aux":
            continue
        if not isinstance(part, (list, tuple)):
            raise _bad(op_type, phase, (
                f"the returned {what} {kind} must be a list with one entry per {what}, got "
                f"{part!r}"
            ))
        if len(part) != count:
            raise _bad(op_type, phase, (
                f"expecting {count} entries in returned {what} {kind}, got {len(part)} "
                f"({part!r})"
            ))
    return parts


def _shape(entry, op_type, what):
    """One shape infer_shape returned: a list or tuple of non-negative ints."""
    if isinstance(entry, (int, np.integer)):
        raise _bad(op_type, "infer_shape", (
            f"the shape returned for {what} is the number {int(entry)}; each shape is a list of "
            f"dimensions, so the lists hold one list per array. Fix: [[{int(entry)}]], not "
            f"[{int(entry)}]"
        ))
    if not isinstance(entry, (list, tuple)) or not all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0
            for n in entry):
        raise _bad(op_type, "infer_shape", (
            f"the shape returned for {what} is {entry!r}; a shape is a list of non-negative "
            f"ints, e.g. [2, 3]"
        ))
    return tuple(int(n) for n in entry)


def _dtype(entry, op_type, what):
    """One type infer_type returned: a numeric NumPy dtype (np.float32, 'float64', ...)."""
    try:
        dtype = None if entry is None else np.dtype(entry)
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in "biufc":
        raise _bad(op_type, "infer_type", (
            f"the type returned for {what} is {entry!r}, which is not a numeric dtype. Fix: "
            f"return NumPy types such as numpy.float32, or in_type[0] to keep the input's"
        ), TypeError)
    return dtype


def _infer(call, args, aux):
    """Run infer_shape, infer_type and declare_backward_dependency; check them against the data."""
    prop, op_type = call.prop, call.op_type
    counts = (len(call.arg_names), len(call.out_names), len(call.aux_names))
    with user_code(op_type, "infer_shape"):
        ret = prop.infer_shape([list(t.shape) for t in args])
    ishape, oshape, ashape = _split(ret, op_type, "infer_shape", counts)
    given = [(f"argument {call.arg_names[i]!r}", t.shape, s) for i, (t, s) in
             enumerate(zip(args, ishape, strict=True))]
    given += [(f"aux state {call.aux_names[i]!r}", t.shape, s) for i, (t, s) in
              enumerate(zip(aux, ashape or [t.shape for t in aux], strict=True))]
    for what, have, said in given:
        said = _shape(said, op_type, what)
        if said != tuple(have):
            raise _bad(op_type, "infer_shape", (
                f"returned shape {said} for {what}, but that input has shape {tuple(have)}. "
                f"Fix: return the input shapes unchanged"
            ))
    call.out_shapes = [_shape(s, op_type, f"output {call.out_names[j]!r}")
                       for j, s in enumerate(oshape)]
    call.in_shapes = [list(t.shape) for t in args] + [list(t.shape) for t in aux]
    with user_code(op_type, "infer_type"):
        ret = prop.infer_type([t.dtype.type for t in args])
    itype, otype, _ = _split(ret, op_type, "infer_type", counts)
    for i, (t, said) in enumerate(zip(args, itype, strict=True)):
        said = _dtype(said, op_type, f"argument {call.arg_names[i]!r}")
        if said != t.dtype:
            raise _bad(op_type, "infer_type", (
                f"returned dtype {said} for argument {call.arg_names[i]!r}, but that input is "
                f"{t.dtype}. Fix: convert the input with .astype(...) or return its dtype"
            ), TypeError)
    call.out_types = [_dtype(t, op_type, f"output {call.out_names[j]!r}")
                      for j, t in enumerate(otype)]
    call.in_types = [t.dtype.type for t in args] + [t.dtype.type for t in aux]
    n_in, n_out = counts[0], counts[1]
    call.ids = (list(range(n_out)), list(range(n_out, n_out + n_in)),
                list(range(n_out + n_in, 2 * n_out + n_in)))
    with user_code(op_type, "declare_backward_dependency"):
        deps = prop.declare_backward_dependency(*call.ids)
    call.deps = _dependencies(deps, call)


def _dependencies(deps, call):
    """The ids declare_backward_dependency returned: a list drawn from the ids it was given."""
    valid = {i for ids in call.ids for i in ids}
    ids_text = (f"the ids are out_grad {call.ids[0]}, in_data {call.ids[1]}, out_data "
                f"{call.ids[2]}")
    if not isinstance(deps, (list, tuple)):
        raise _bad(call.op_type, "declare_backward_dependency", (
            f"must return a list of ids, got {deps!r}; {ids_text}. Fix: e.g. return "
            f"out_grad + in_data"
        ), TypeError)
    unknown = [d for d in deps if isinstance(d, bool) or not isinstance(d, (int, np.integer))
               or int(d) not in valid]
    if unknown:
        raise _bad(call.op_type, "declare_backward_dependency", (
            f"returned {unknown!r}, which are not among the ids it was given; {ids_text}. Fix: "
            f"build the list from the out_grad, in_data and out_data arguments"
        ))
    return {int(d) for d in deps}
