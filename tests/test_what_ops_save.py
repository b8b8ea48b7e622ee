"""What each op keeps for backward, against PyTorch 2.13.

What an op saves is observable: an in-place change of a saved tensor before backward is an error
("one of the variables needed for gradient computation has been modified by an inplace
operation"), a second backward through a node that saved tensors is an error, and what is saved
stays in memory until backward. `SAVES` lists, per op, the tensors PyTorch's node keeps (its
`grad_fn._saved_*` attributes) and those kit's node keeps (`saved_values()`, named as the op's
declaration names them), each as the role it plays in the call: an input (`a`, `b`, `c`, ...),
the output (`out`, `out1` for a second output such as indices), or an `internal` intermediate.
A row where the two differ says why. `test_in_place_changes_and_second_backwards_raise_as_in_
pytorch` then runs every row both ways: each input and the output changed in place after the
op, then backward, and a second backward.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import kit.torch as ktorch
from kit.engine import SAVED_NAMES

torch = pytest.importorskip("torch", reason="PyTorch is the oracle of what each op saves")

RNG = np.random.default_rng(5)


def floats(*shape, grad=True, low=0.5, high=2.0):
    """A float64 input: positive, no ties (a clone of a leaf when it requires grad, so that it
    can be changed in place)."""
    return ("float", RNG.uniform(low, high, size=shape), grad)


def ints(*values):
    return ("int", np.array(values, dtype=np.int64), False)


def mask(*values):
    return ("bool", np.array(values, dtype=bool), False)


@dataclass
class Row:
    program: object  # program(T, *inputs) -> the op's output (or a tuple: values, indices)
    inputs: tuple
    pytorch: str  # "node: name role, ..." as PyTorch keeps them
    kit: str  # the same for kit
    why: str = ""  # where they differ


def F(T):  # noqa: N802 - torch.nn.functional's usual name
    return T.nn.functional


X, Y, W = floats(3), floats(3), floats(3, grad=False)
M, N = floats(2, 3), floats(3, 2)
COMPOSITE = ("kit's {} is a composite: what its last primitive keeps is what kit keeps")

SAVES = {
    # --- elementwise ------------------------------------------------------------------------
    "add": Row(lambda T, a, b: a + b, (X, Y), "AddBackward0:", "add:"),
    "sub": Row(lambda T, a, b: a - b, (X, Y), "SubBackward0:", "sub:"),
    "mul": Row(lambda T, a, b: a * b, (X, Y), "MulBackward0: other b, self a", "mul: a a, b b"),
    "mul, b constant": Row(lambda T, a, b: a * b, (X, W), "MulBackward0: other b",
                           "mul: b b"),
    "mul, a constant": Row(lambda T, a, b: a * b, (W, X), "MulBackward0: self a", "mul: a a"),
    "div": Row(lambda T, a, b: a / b, (X, Y), "DivBackward0: other b, self a", "div: a a, b b"),
    "div, b constant": Row(lambda T, a, b: a / b, (X, W), "DivBackward0: other b", "div: b b"),
    "div, a constant": Row(lambda T, a, b: a / b, (W, X), "DivBackward0: other b, self a",
                           "div: a a, b b"),
    "x ** 2": Row(lambda T, a: a ** 2, (X,), "PowBackward0: self a", "pow: a a"),
    "x ** y": Row(lambda T, a, b: a ** b, (X, Y), "PowBackward1: exponent b, result out, self a",
                  "pow: a a, b b, output out"),
    "x ** constant y": Row(lambda T, a, b: a ** b, (X, W),
                           "PowBackward1: exponent b, result out, self a",
                           "pow: a a, b b, output out"),
    "2 ** x": Row(lambda T, a: 2 ** a, (X,), "PowBackward2: exponent a, result out",
                  "pow: b a, output out"),
    "neg": Row(lambda T, a: -a, (X,), "NegBackward0:", "neg:"),
    "exp": Row(lambda T, a: a.exp(), (X,), "ExpBackward0: result out", "exp: output out"),
    "log": Row(lambda T, a: a.log(), (X,), "LogBackward0: self a", "log: x a"),
    "log1p": Row(lambda T, a: a.log1p(), (X,), "Log1PBackward0: self a", "log1p: x a"),
    "expm1": Row(lambda T, a: a.expm1(), (X,), "Expm1Backward0: result out", "expm1: output out"),
    "sqrt": Row(lambda T, a: a.sqrt(), (X,), "SqrtBackward0: result out", "sqrt: output out"),
    "tanh": Row(lambda T, a: a.tanh(), (X,), "TanhBackward0: result out", "tanh: output out"),
    "sigmoid": Row(lambda T, a: a.sigmoid(), (X,), "SigmoidBackward0: result out",
                   "sigmoid: output out"),
    "abs": Row(lambda T, a: a.abs(), (X,), "AbsBackward0: self a", "abs: x a"),
    "sin": Row(lambda T, a: a.sin(), (X,), "SinBackward0: self a", "sin: x a"),
    "cos": Row(lambda T, a: a.cos(), (X,), "CosBackward0: self a", "cos: x a"),
    "erf": Row(lambda T, a: T.erf(a), (X,), "ErfBackward0: self a", "erf: x a"),
    "sign": Row(lambda T, a: a.sign(), (X,), "SignBackward0:", "sign:"),
    "relu": Row(lambda T, a: T.relu(a - 1), (X,), "ReluBackward0: result out",
                "relu: output out"),
    "maximum": Row(lambda T, a, b: T.maximum(a, b), (X, Y), "MaximumBackward0: other b, self a",
                   "maximum: a a, b b"),
    "minimum": Row(lambda T, a, b: T.minimum(a, b), (X, Y), "MinimumBackward0: other b, self a",
                   "minimum: a a, b b"),
    "where": Row(lambda T, c, a, b: T.where(c, a, b), (mask(1, 0, 1), X, Y),
                 "WhereBackward0: condition a", "where: condition a"),
    "clamp": Row(lambda T, a: a.clamp(0.8, 1.5), (X,), "ClampBackward1: self a", "clamp: x a"),
    "clamp, Tensor bounds": Row(lambda T, a, lo, hi: T.clamp(a, lo, hi),
                                (X, floats(3, low=0.5, high=1.0), floats(3, low=1.5, high=2.0)),
                                "ClampBackward0: max c, min b, self a",
                                "clamp: max c, min b, x a"),
    "remainder": Row(lambda T, a, b: a % b, (X, Y), "RemainderBackward1: other b, self a",
                     "remainder: a a, b b"),
    "remainder, b constant": Row(lambda T, a, b: a % b, (X, W), "RemainderBackward1:",
                                 "remainder:"),
    "fmod": Row(lambda T, a, b: T.fmod(a, b), (X, Y), "FmodBackward1: other b, self a",
                "fmod: a a, b b"),
    # --- reductions -------------------------------------------------------------------------
    "sum": Row(lambda T, a: a.sum(), (X,), "SumBackward0:", "sum:"),
    "mean": Row(lambda T, a: a.mean(0), (M,), "MeanBackward1:", "mean:"),
    "max": Row(lambda T, a: a.max(), (X,), "MaxBackward1: result out, self a",
               "max: output out, x a"),
    "max(dim)": Row(lambda T, a: a.max(1), (M,), "MaxBackward0: indices out1",
                    "max: saved[0] out1"),
    "min": Row(lambda T, a: a.min(), (X,), "MinBackward1: result out, self a",
               "min: output out, x a"),
    "amax": Row(lambda T, a: a.amax(1), (M,), "AmaxBackward0: result out, self a",
                "amax: output out, x a"),
    "amin": Row(lambda T, a: a.amin(), (X,), "AminBackward0: result out, self a",
                "amin: output out, x a"),
    "logsumexp": Row(lambda T, a: T.logsumexp(a, 1), (M,),
                     "LogsumexpBackward0: result out, self a", "logsumexp: output out, x a"),
    "softmax": Row(lambda T, a: T.softmax(a, 1), (M,), "SoftmaxBackward0: result out",
                   "softmax: output out"),
    "log_softmax": Row(lambda T, a: T.log_softmax(a, 1), (M,),
                       "LogSoftmaxBackward0: result out", "log_softmax: output out"),
    "cross_entropy": Row(
        lambda T, a, t: F(T).cross_entropy(a, t), (M, ints(0, 2)),
        "NllLossBackward0: self internal, target b",
        "cross_entropy: logits a, probabilities internal, target b",
        "kit's cross_entropy is one fused node: it keeps the logits (its second-order "
        "gradient recomputes the probabilities from them) and the probabilities; PyTorch's "
        "is log_softmax then nll_loss, whose node keeps log_softmax's output"),
    # --- shapes, indexing, joining ----------------------------------------------------------
    "reshape": Row(lambda T, a: a.reshape(3, 2), (M,), "ViewBackward0:", "reshape:"),
    "permute": Row(lambda T, a: a.permute(1, 0), (M,), "PermuteBackward0:", "permute:"),
    "expand": Row(lambda T, a: a.expand(2, 3), (X,), "ExpandBackward0:", "expand:"),
    "x[1:]": Row(lambda T, a: a[1:], (X,), "SliceBackward0:", "getitem:",
                 ),
    "x[i]": Row(lambda T, a, i: a[i], (X, ints(0, 2)), "IndexBackward0: indices b",
                "getitem: saved[0] b"),
    "x[mask]": Row(lambda T, a, m: a[m], (X, mask(1, 0, 1)), "IndexBackward0: indices b",
                   "getitem: saved[0] b"),
    "x[i] = v": Row(lambda T, a, i, v: _setitem(a, i, v), (X, ints(0, 2), floats(2)),
                    "IndexPutBackward0: indices b", "index_put: saved[0] b"),
    "cat": Row(lambda T, a, b: T.cat([a, b]), (X, Y), "CatBackward0:", "cat:"),
    "stack": Row(lambda T, a, b: T.stack([a, b]), (X, Y), "StackBackward0:", "stack:"),
    "to float32": Row(lambda T, a: a.float(), (X,), "ToCopyBackward0:", "astype:"),
    "clone": Row(lambda T, a: a.clone(), (X,), "CloneBackward0:", "clone:"),
    "diagonal": Row(lambda T, a: a.diagonal(), (floats(3, 3),), "DiagonalBackward0:",
                    "diagonal:"),
    "sort": Row(lambda T, a: T.sort(a), (X,), "SortBackward0: indices out1",
                "getitem: saved[0] out1"),
    # --- products and layers ----------------------------------------------------------------
    "matmul": Row(lambda T, a, b: a @ b, (M, N), "MmBackward0: mat2 b, self a",
                  "matmul: a a, b b"),
    "matmul, b constant": Row(lambda T, a, b: a @ b, (M, floats(3, 2, grad=False)),
                              "MmBackward0: mat2 b", "matmul: b b"),
    "linear": Row(lambda T, a, w, b: F(T).linear(a, w, b), (M, floats(4, 3), floats(4)),
                  "AddmmBackward0: mat1 a, mat2 b", "linear: weight b, x a"),
    "linear, bias alone": Row(lambda T, a, w, b: F(T).linear(a, w, b),
                              (floats(2, 3, grad=False), floats(4, 3, grad=False), floats(4)),
                              "AddmmBackward0:", "linear:"),
    "conv2d": Row(lambda T, a, w: F(T).conv2d(a, w), (floats(1, 1, 4, 4), floats(1, 1, 3, 3)),
                  "ConvolutionBackward0: input a, weight b", "conv2d: weight b, x a"),
    "max_pool2d": Row(lambda T, a: F(T).max_pool2d(a, 2), (floats(1, 1, 4, 4),),
                      "MaxPool2DWithIndicesBackward0: result1 internal, self a",
                      "max_pool2d: indices internal, x a"),
    # --- composites: what the last primitive keeps ------------------------------------------
    "prod": Row(lambda T, a: a.prod(), (X,), "ProdBackward0: result out, self a",
                "prod: output out, x a"),
    "prod(dim)": Row(lambda T, a: a.prod(0), (M,), "ProdBackward1: result out, self a",
                     "prod_dim: output out, x a"),
    "var": Row(lambda T, a: a.var(), (X,), "VarBackward0: self a", "var: x a"),
    "std(dim)": Row(lambda T, a: a.std(0), (M,), "StdBackward0: result out, self a",
                    "std: output out, x a"),
    "norm": Row(lambda T, a: a.norm(), (X,), "LinalgVectorNormBackward0: result out, self a",
                "where: condition internal", COMPOSITE.format("norm (where(s == 0, 0, sqrt s))")),
    "mse_loss": Row(lambda T, a, b: F(T).mse_loss(a, b), (X, Y),
                    "MseLossBackward0: self a, target b", "mean:",
                    COMPOSITE.format("mse_loss (mean of diff * diff)")),
    "cumsum": Row(lambda T, a: a.cumsum(0), (X,), "CumsumBackward0:", "cumsum:"),
    "gather": Row(lambda T, a, i: a.gather(0, i), (X, ints(0, 2)),
                  "GatherBackward0: index b, self a", "getitem: saved[0] b",
                  COMPOSITE.format("gather (an indexing)")),
    "scatter_add": Row(lambda T, a, i, v: a.scatter_add(0, i, v), (X, ints(0, 2), floats(2)),
                       "ScatterAddBackward0: index b", "add:",
                       COMPOSITE.format("scatter_add (x + a scatter that keeps the index)")),
    "index_add": Row(lambda T, a, i, v: a.index_add(0, i, v), (X, ints(2, 0), floats(2)),
                     "IndexAddBackward0: index b, source c", "add:",
                     COMPOSITE.format("index_add (x + a scatter that keeps the index)")),
    "masked_fill": Row(lambda T, a, m: a.masked_fill(m, 0.0), (X, mask(1, 0, 1)),
                       "MaskedFillBackward0: mask b", "where: condition b"),
    "topk": Row(lambda T, a: a.topk(2), (X,), "TopkBackward0: indices out1",
                "getitem:", COMPOSITE.format("topk (a slice of sort's values)")),
    "max_pool2d, indices returned": Row(
        lambda T, a: F(T).max_pool2d(a, 2, return_indices=True), (floats(1, 1, 4, 4),),
        "MaxPool2DWithIndicesBackward0: result1 out1, self a",
        "max_pool2d: indices out1, x a"),
}


def _setitem(a, i, v):
    a = a * 1
    a[i] = v
    return a


def _inputs(T, row):
    """The row's inputs for library T: (the tensors the op gets, the leaves behind them)."""
    made, leaves = [], []
    for kind, values, grad in row.inputs:
        t = T.tensor(values.copy(), dtype=T.float64 if kind == "float" else None,
                     requires_grad=grad)
        leaves.append(t)
        made.append(t.clone() if grad else t)
    return made, leaves


def _outputs(out):
    return tuple(out) if isinstance(out, tuple) else (out,)


def _role(t, inputs, outputs, same):
    letters = "abcdefgh"
    for i, x in enumerate(inputs):
        if same(t, x):
            return letters[i]
    for i, y in enumerate(outputs):
        if same(t, y):
            return "out" if i == 0 else f"out{i}"
    return "internal"


def _torch_saves(node, inputs, outputs):
    def same(t, x):  # the same memory (a saved weight may be its transpose, a view)
        return t.numel() == x.numel() and t.data_ptr() == x.data_ptr()

    kept = []
    for attr in sorted(a for a in dir(node) if a.startswith("_saved_")):
        value = getattr(node, attr)
        for t in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(t, torch.Tensor) and not (t.dim() == 0 and not any(
                    same(t, x) for x in (*inputs, *outputs))):  # (a number PyTorch wrapped)
                kept.append(f"{attr[len('_saved_'):]} {_role(t, inputs, outputs, same)}")
    return f"{type(node).__name__}: {', '.join(kept)}".strip()


def _kit_saves(node, inputs, outputs):
    def same(value, x):
        return value is x or value is x._data

    values = node.saved_values()
    declared = list(SAVED_NAMES.get(node.op, ()))  # the engine's names, by the node's op
    names = declared if len(declared) == len(values) else [
        f"saved[{i}]" for i in range(len(values))]
    kept = sorted(f"{name} {_role(v, inputs, outputs, same)}"
                  for name, v in zip(names, values, strict=True)
                  if isinstance(v, ktorch.Tensor) or hasattr(v, "shape"))  # not numbers, None
    return f"{node.op}: {', '.join(kept)}".strip()


@pytest.mark.parametrize("name", list(SAVES))
def test_each_op_saves_what_the_table_says(name):
    row = SAVES[name]
    for T, describe, want in ((torch, _torch_saves, row.pytorch),
                              (ktorch, _kit_saves, row.kit)):
        inputs, _ = _inputs(T, row)
        outputs = _outputs(row.program(T, *inputs))
        assert describe(outputs[0].grad_fn, inputs, outputs) == want, T.__name__
    # a difference is stated, and a stated difference is one
    roles = [sorted(part.split()[-1] for part in text.split(": ", 1)[1].split(", ") if part)
             for text in (row.pytorch + " ", row.kit + " ")]
    assert (roles[0] != roles[1]) == bool(row.why), name


# (row, change) -> why kit and PyTorch differ. A change is an input's letter, "out" or "out1" (an
# output changed in place after the op) or "twice" (a second backward without retain_graph).
DIFFERENT = {
    ("cross_entropy", "a"): "kit's fused node keeps the logits (see SAVES), PyTorch's does not",
    ("norm", "out"): "PyTorch's norm node keeps the result; kit's composite does not",
    ("mse_loss", "a"): "PyTorch's MseLossBackward0 keeps input and target; kit's composite "
                       "keeps their difference",
    ("mse_loss", "b"): "as for a",
    ("gather", "a"): "PyTorch's GatherBackward0 keeps x; kit's indexing does not need it",
    ("index_add", "c"): "PyTorch's IndexAddBackward0 keeps the source (for its shape); kit's "
                        "scatter does not need it",
}


def _outcome(T, row, change):
    """What changing `change` in place after the op, then backward, gives: the gradients of the
    leaves, or the class of the error."""
    inputs, leaves = _inputs(T, row)
    outputs = _outputs(row.program(T, *inputs))
    out = outputs[0]
    try:
        loss = out.double().sum()
        if change != "twice":
            changed = outputs[int(change[3:] or 0)] if change.startswith("out") else inputs[
                "abcdefgh".index(change)]
            # (an index, mask or condition: a new value, still a valid one)
            changed.mul_(1) if changed.is_floating_point() else changed.fill_(1)
        loss.backward(retain_graph=False)
        if change == "twice":
            out.double().sum().backward()
    except RuntimeError as exc:
        known = ("modified by an inplace operation", "backward through the graph a second time")
        return "RuntimeError", [k for k in known if k in str(exc)]
    return [None if t.grad is None else t.grad.numpy().round(8).tolist() for t in leaves]


def _changes(row):
    outputs = _outputs(row.program(ktorch, *_inputs(ktorch, row)[0]))
    return [*"abcdefgh"[:len(row.inputs)], "out", *(f"out{i}" for i in range(1, len(outputs))),
            "twice"]


@pytest.mark.parametrize("name", list(SAVES))
def test_in_place_changes_and_second_backwards_raise_as_in_pytorch(name):
    row = SAVES[name]
    for change in _changes(row):
        ours, theirs = _outcome(ktorch, row, change), _outcome(torch, row, change)
        if (name, change) in DIFFERENT:
            assert ours != theirs, (name, change, "no longer differs: remove it from DIFFERENT")
        else:
            assert ours == theirs, (name, change)
