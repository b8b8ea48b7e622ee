"""Guards: what a call must match to reuse a graph, and the words for a graph break.

A compiled function keeps one cache entry per signature: the structure of the arguments, each
tensor's shape, dtype, device and requires_grad flag, the other arguments' values, and the modes
that change what the function computes (grad mode, kit.mx's recording and training flags, a
module's training flags). Tensors the function read from outside (captured) are checked on every
call too, and so are the training flags of the modules it called (a closure over a model traces
again after model.eval(): its dropout and batch norm compute something else), and their
parameters and buffers must be the same objects (one assigned anew traces again). A break's reason
names the source line, as torch.compile's explanations do.
"""

from __future__ import annotations

import linecache
import os
import sys

import numpy as np

from kit._tensor import Tensor
from kit.grad_mode import STATE

_KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

REASONS = {  # what -> (why the graph breaks there, how to avoid it)
    "bool": ("Python branches on a tensor's value (bool(tensor), `if tensor > 0:`, and/or)",
             "make the code branchless: kit.where(cond, a, b), kit.clamp, kit.maximum"),
    "item": ("a tensor's value goes to Python (tensor.item(), float(tensor), int(tensor))",
             "keep it a tensor: x * s instead of x * s.item()"),
    "tolist": ("a tensor's values go to Python (tensor.tolist())",
               "keep them in tensors; call tolist() on the result, outside"),
    "index": ("a tensor is used as a Python integer (an index, range(tensor))",
              "index with the tensor itself (x[idx]) or pass the integer in"),
    "print": ("a tensor is printed or formatted (print, repr, str, f-string)",
              "return the value and print it outside the compiled function"),
    "numpy": ("a tensor's data leaves kit (tensor.numpy(), np.asarray(tensor))",
              "use kit operations; convert the result, outside"),
    "numpy_function": ("a NumPy function is called on a tensor (np.floor(tensor)): kit cannot "
                       "see inside it", "use the kit operation (kit.exp(x), x.abs())"),
    "inplace": ("an in-place change of a tensor the function did not make itself (an input, "
                "a captured tensor, a view, or a value saved for backward)",
                "use the out-of-place op (x = x + 1), or clone first (x = x.clone())"),
    "backward": ("backward()/grad() runs inside the function in a form a replay cannot repeat "
                 "(kit.grad, several roots, a non-scalar root, a gradient given, retain_graph, "
                 "create_graph, inputs=, anomaly mode or saved-tensor hooks)",
                 "call loss.backward() on one scalar loss traced in the function, or call "
                 "backward outside"),
    "after_backward": ("an operation after loss.backward() or optimizer.step() in the function "
                       "(a replay runs the whole forward first, then the backward and the "
                       "optimiser's calls, in their order)",
                       "compute everything before loss.backward(); end the function with the "
                       "backward and the optimiser's step and zero_grad"),
    "effect": ("a call on an optimiser or a scheduler inside the function with arguments other "
               "than flags (a closure, a tensor, a metric: a replay would pass the traced ones "
               "again), or one that returns a value",
               "call step() without arguments, or make the call outside"),
    "grad": ("a .grad is read or set inside the function (a replay would read the tensor the "
             "trace saw, and set nothing; .grad is another tensor on every step)",
             "read gradients outside the compiled function; reset them with "
             "optimizer.zero_grad() (replayed)"),
    "hook": ("a gradient hook is registered inside the function",
             "register hooks outside the compiled function"),
    "random": ("random numbers are drawn outside kit's random functions (kit.rand, kit.randn, "
               "kit.randint): a replay would repeat them", "draw them with kit.rand/randn"),
    "leaf": ("a new leaf that requires grad is made inside the function",
             "make it outside and pass it in"),
    "transform": ("a kit.func transform (vmap, grad, ...) runs inside the function",
                  "apply the transform outside the compiled function"),
    "untraced": ("an operation kit.compile cannot see made a tensor from traced values",
                 "use kit operations"),
    "output": ("the function returns or makes something that is not a tensor, a number or a "
               "structure of them", "return tensors, numbers, or tuples/lists/dicts of them"),
    "seed": ("kit.manual_seed is called inside the function",
             "seed before calling the compiled function"),
}


class CompileError(RuntimeError):
    """kit.compile(fullgraph=True) met a graph break (or a function it cannot compile)."""


def user_line(skip_kit=True):
    """(file, line, function, source text) of the innermost frame outside kit (the user's
    line), or of the caller when every frame is kit's."""
    frame = sys._getframe(1)
    first = None
    while frame is not None:
        file = frame.f_code.co_filename
        if first is None:
            first = frame
        if not (skip_kit and os.path.abspath(file).startswith(_KIT)):
            break
        frame = frame.f_back
    frame = frame or first
    file, line = frame.f_code.co_filename, frame.f_lineno
    return (file, line, frame.f_code.co_name, linecache.getline(file, line).strip())


def tensor_spec(t):
    """What a tensor must match: shape, dtype, device (array type) and requires_grad."""
    d = t._data
    return (d.shape, d.dtype, type(d), bool(t.requires_grad if t._base is not None else t._rg))


def signature(leaves, structure, extra):
    """The cache key of a call: its argument structure, per tensor leaf its spec, per other leaf
    its value (hashable), which leaves are the same tensor, and the modes."""
    specs = []
    ids = []
    for leaf in leaves:
        if isinstance(leaf, Tensor):
            d = leaf._data  # (tensor_spec, written out: this runs on every call)
            specs.append((d.shape, d.dtype, type(d), bool(
                leaf.requires_grad if leaf._base is not None else leaf._rg)))
            ids.append(id(leaf))
        else:
            specs.append(_hashable(leaf))
    aliases = None
    if len(set(ids)) != len(ids):  # f(x, x) and f(x, y) are different graphs
        aliases = tuple(ids.index(i) for i in ids)
    return (structure, tuple(specs), aliases, STATE.enabled, STATE.recording, STATE.training,
            extra)


def _hashable(value):
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_hashable(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _hashable(v)) for k, v in sorted(value.items(), key=repr)))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))  # NOTE: an unhashable object: the same object only
    return (type(value), value)


def fast_guard(args, program, modes=None, modes_of=None):
    """A function of a call's positional arguments, True when they match `args` (the same
    number of tensors, each with its spec, the same aliasing), the program's captured tensors
    and modules still match theirs and the modes are the same: what `signature`, the cache
    lookup, `captured_ok` and `modes_ok` establish, written out for this one case (as
    torch.compile writes its guards as one function), so that a call like the last skips
    building the key. `modes`: a module's training flags (`modes_of(fn)`), when the compiled
    function is one. None where views are involved (their flag is computed)."""
    if len(args) > 8 or any(t._base is not None for t in args) or any(
            t._base is not None for t, _ in program.captured):
        return None
    names = {"T": Tensor, "STATE": STATE, "MODES_OK": modes_ok, "MODULES": program.modules,
             "MODES_OF": modes_of, "MODES": modes}
    lines = ["def check(args):", f"    if len(args) != {len(args)}: return False"]
    if args:
        lines.append(f"    {''.join(f't{k}, ' for k in range(len(args)))}= args")

    def spec(name, d, rg):
        names[f"S_{name}"], names[f"D_{name}"], names[f"A_{name}"] = d.shape, d.dtype, type(d)
        return [f"    d = {name}._data",
                f"    if d.shape != S_{name} or (d.dtype is not D_{name} and d.dtype != "
                f"D_{name}) or type(d) is not A_{name} or {name}._base is not None or "
                f"bool({name}._rg) is not {bool(rg)}: return False"]

    for k, t in enumerate(args):
        lines.append(f"    if type(t{k}) is not T: return False")
        lines += spec(f"t{k}", t._data, t._rg)
        lines += [f"    if t{j} {'is not' if args[j] is t else 'is'} t{k}: return False"
                  for j in range(k)]
    for k, (t, _) in enumerate(program.captured):
        names[f"c{k}"] = t
        lines += spec(f"c{k}", t._data, t._rg)
    lines.append(f"    if STATE.enabled is not {STATE.enabled} or STATE.recording is not "
                 f"{STATE.recording} or STATE.training is not {STATE.training}: return False")
    if program.modules:
        lines.append("    if not MODES_OK(MODULES): return False")
    if modes is not None:
        lines.append("    if MODES_OF() != MODES: return False")
    lines.append("    return True")
    exec(compile("\n".join(lines) + "\n", "<kit.compile guard>", "exec"), names)
    return names["check"]


def captured_ok(captured):
    """True when every captured tensor still has the spec it was traced with."""
    for t, spec in captured:
        d = t._data
        if d.shape != spec[0] or (d.dtype is not spec[1] and d.dtype != spec[1]) or \
                type(d) is not spec[2] or bool(t._rg) is not spec[3]:
            return False
    return True


def modes_ok(modules):
    """True when every module the trace called still has the training flag it had then (a
    compiled function that calls model, after model.eval(), traces again) and the same
    parameter and buffer objects (one assigned anew traces again)."""
    for module, training, params, buffers in modules:
        if module.training is not training or not _same_objects(
                module._parameters, params) or not _same_objects(module._buffers, buffers):
            return False
    return True


def _same_objects(table, recorded):
    if len(table) != len(recorded):
        return False
    for a, b in zip(table.values(), recorded, strict=True):
        if a is not b:
            return False
    return True


def same_value(a, b):
    """A guard's comparison: equal values, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b
