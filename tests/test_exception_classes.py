"""The misuse table: for each misuse row of REFERENCE.md (PyTorch's side) and each case of issue
11, the exception class PyTorch 2.13 raises, stored here. kit must raise that class (or a class
deriving from it and from the class kit raised before). Where PyTorch is installed each row also
runs on it, so a stored class that stops being PyTorch's fails too.

`python -m tests.test_exception_classes` prints the table: row, PyTorch's class, kit's class.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import kit.torch as kt


def _fn(torch, forward, backward, **extra):
    """A combined-form autograd.Function of two plain functions."""
    body = {"forward": staticmethod(forward), "backward": staticmethod(backward), **extra}
    return type("F", (torch.autograd.Function,), body)


def _leaf(torch, *values):
    return torch.tensor(list(values or (1.0, 2.0, 3.0)), requires_grad=True)


def _legacy_call(torch):
    class Legacy(torch.autograd.Function):
        def forward(self, x):
            return x * 2

    Legacy()(_leaf(torch))


def _wrong_count(torch):
    mul = _fn(torch, lambda ctx, a, b: a * b, lambda ctx, g: g)
    mul.apply(_leaf(torch), torch.ones(3)).sum().backward()


def _wrong_shape(torch):
    f = _fn(torch, lambda ctx, x: x * 2, lambda ctx, g: torch.ones(5))
    f.apply(_leaf(torch)).sum().backward()


def _float_gradient(torch):
    f = _fn(torch, lambda ctx, x: x * 2, lambda ctx, g: 1.0)
    f.apply(_leaf(torch)).sum().backward()


def _backward_and_vjp(torch):
    f = _fn(torch, lambda ctx, x: x * 2, lambda ctx, g: g, vjp=staticmethod(lambda c, g: g))
    f.apply(_leaf(torch)).sum().backward()


def _save_non_tensor(torch):
    def forward(ctx, x):
        ctx.save_for_backward(x, 3.0)
        return x * 2

    _fn(torch, forward, lambda ctx, g: g).apply(_leaf(torch))


def _saved_modified(torch):
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    y = _fn(torch, forward, lambda ctx, g: g * ctx.saved_tensors[0]).apply(_leaf(torch))
    with torch.no_grad():
        y.add_(1)
    y.sum().backward()


def _dirty_leaf(torch):
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    _fn(torch, forward, lambda ctx, g: g).apply(_leaf(torch))


def _once_differentiable_twice(torch):
    def backward(ctx, g):
        return g * 2

    f = _fn(torch, lambda ctx, x: x * 2, torch.autograd.function.once_differentiable(backward))
    x = _leaf(torch)
    (g,) = torch.autograd.grad(f.apply(x).sum(), x, create_graph=True)
    g.sum().backward()


def _backward_twice(torch):
    y = _leaf(torch).exp().sum()
    y.backward()
    y.backward()


def _vmap_without_rule(torch):
    class Doubled(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

    torch.func.vmap(Doubled.apply)(torch.ones(2, 3))


def _grad_of_vector(torch):
    torch.func.grad(lambda x: x * 2)(torch.ones(3))


def _gradcheck_mismatch(torch):
    f = _fn(torch, lambda ctx, x: x * 2, lambda ctx, g: g * 3)
    torch.autograd.gradcheck(f.apply, (_leaf(torch).double().detach().requires_grad_(),))


def _gradcheck_nothing_requires_grad(torch):
    torch.autograd.gradcheck(lambda t: t * 2, (torch.ones(2, dtype=torch.float64),))


def _hook_changes(torch, change):
    w = _leaf(torch)
    w.register_hook(change)
    (w * 2).sum().backward()


def _assign_grad(torch, grad):
    _leaf(torch).grad = grad


def _in_place(torch, x, op):
    getattr(x, op[0])(*op[1:])


def _format(torch):
    return f"{torch.ones(2):.2f}"


def _numpy_ufunc(torch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        np.arctan(_leaf(torch))


def _int_division(torch, op):
    return op(torch.tensor([3, 4]), torch.tensor([1, 0]))


# (row, what PyTorch 2.13 raises, the misuse as a function of the library)
ROWS = [
    # REFERENCE.md, "PyTorch torch.autograd.Function" and "Graph behaviour"
    ("MyFn()(x): a legacy non-static forward", RuntimeError, _legacy_call),
    ("backward returns too few gradients", RuntimeError, _wrong_count),
    ("backward returns a gradient of the wrong shape", RuntimeError, _wrong_shape),
    ("backward returns a float, not a tensor", RuntimeError, _float_gradient),
    ("both backward and vjp defined", RuntimeError, _backward_and_vjp),
    ("save_for_backward of a non-tensor", TypeError, _save_non_tensor),
    ("a saved tensor modified in place before backward", RuntimeError, _saved_modified),
    ("mark_dirty on a leaf that requires grad", RuntimeError, _dirty_leaf),
    ("@once_differentiable differentiated twice", RuntimeError, _once_differentiable_twice),
    ("y.backward() on a non-scalar", RuntimeError, lambda t: (_leaf(t) * 2).backward()),
    ("a second backward without retain_graph", RuntimeError, _backward_twice),
    ("backward of a tensor without grad_fn", RuntimeError, lambda t: t.ones(2).sum().backward()),
    ("vmap of a Function without a vmap rule", RuntimeError, _vmap_without_rule),
    ("func.grad of a non-scalar function", RuntimeError, _grad_of_vector),
    ("gradcheck of a wrong backward", RuntimeError, _gradcheck_mismatch),
    ("gradcheck with no input requiring grad", ValueError, _gradcheck_nothing_requires_grad),
    # issue 11: shapes
    ("expand(-1, 3) of shape (3,)", RuntimeError, lambda t: t.ones(3).expand(-1, 3)),
    ("t() of a 3-d tensor", RuntimeError, lambda t: t.ones(2, 3, 4).t()),
    ("reshape(2.5, 2)", TypeError, lambda t: t.ones(5).reshape(2.5, 2)),
    ("reshape to the wrong size", RuntimeError, lambda t: t.ones(2, 3).reshape(4, 2)),
    ("permute with a repeated dim", RuntimeError, lambda t: t.ones(2, 3).permute(0, 0)),
    ("permute with a dim out of range", IndexError, lambda t: t.ones(2, 3).permute(0, 2)),
    ("sum(dim=(0, 0))", RuntimeError, lambda t: t.ones(2, 3).sum(dim=(0, 0))),
    ("sum(dim=-3) of a 2-d tensor", IndexError, lambda t: t.ones(2, 3).sum(-3)),
    ("argmax(dim=2) of a 2-d tensor", IndexError, lambda t: t.ones(2, 3).argmax(dim=2)),
    ("argmax(dim=[])", TypeError, lambda t: t.ones(2, 3).argmax(dim=[])),
    ("max(dim=(0, 1))", TypeError, lambda t: t.ones(2, 3).max(dim=(0, 1))),
    ("sort(dim=[0])", TypeError, lambda t: t.ones(2, 3).sort(dim=[0])),
    ("softmax() without dim", TypeError, lambda t: t.ones(2, 3).softmax()),
    ("max() of an empty tensor", RuntimeError, lambda t: t.ones(0, 3).max()),
    ("max(dim=0) along an empty dim", IndexError, lambda t: t.ones(0, 3).max(dim=0)),
    ("argmax() of an empty tensor", IndexError, lambda t: t.ones(0).argmax()),
    ("amax(dim=0) along an empty dim", IndexError, lambda t: t.ones(0, 3).amax(0)),
    ("topk with k out of range", RuntimeError, lambda t: t.ones(3).topk(4)),
    ("add of shapes (2,) and (3,)", RuntimeError, lambda t: t.ones(2) + t.ones(3)),
    ("matmul of (2, 3) and (4, 2)", RuntimeError, lambda t: t.ones(2, 3) @ t.ones(4, 2)),
    ("cat of mismatched shapes", RuntimeError, lambda t: t.cat([t.ones(2, 3), t.ones(2, 4)])),
    ("index out of range", IndexError, lambda t: t.ones(2, 3)[2]),
    ("item() of two elements", RuntimeError, lambda t: t.ones(2).item()),
    ("bool() of two elements", RuntimeError, lambda t: bool(t.ones(2))),
    ("len() of a 0-d tensor", TypeError, lambda t: len(t.tensor(1.0))),
    # issue 11: dtypes, bits and logic
    ("~ on a float tensor", TypeError, lambda t: ~t.ones(2)),
    ("bitwise_and of floats", NotImplementedError, lambda t: t.ones(2) & t.ones(2)),
    ("<< of a float tensor", NotImplementedError, lambda t: t.ones(2) << 1),
    ("integer // 0", RuntimeError, lambda t: _int_division(t, lambda a, b: a // b)),
    ("integer % 0", RuntimeError, lambda t: _int_division(t, lambda a, b: a % b)),
    ("bool // bool", NotImplementedError, lambda t: t.tensor([True]) // t.tensor([True])),
    ("logical_and(tensor, 1)", TypeError, lambda t: t.logical_and(t.ones(2), 1)),
    ("fmod(7, tensor)", TypeError, lambda t: t.fmod(7, t.ones(2))),
    ("maximum(tensor, 2)", TypeError, lambda t: t.maximum(t.ones(2), 2)),
    ("mean of an integer tensor", RuntimeError, lambda t: t.tensor([1, 2]).mean()),
    ("a - b with a bool tensor", RuntimeError, lambda t: t.tensor([True]) - t.tensor([False])),
    ("-x of a bool tensor", RuntimeError, lambda t: -t.tensor([True])),
    ("bool ** bool", NotImplementedError, lambda t: t.tensor([True]) ** t.tensor([True])),
    ("softmax of an integer tensor", RuntimeError, lambda t: t.tensor([1, 2]).softmax(0)),
    ("relu of a bool tensor", RuntimeError, lambda t: t.relu(t.tensor([True]))),
    ("integer tensor += 1.5", RuntimeError, lambda t: _in_place(t, t.tensor([1]), ("add_", 1.5))),
    ("integer floor_divide_(2.5)", RuntimeError,
     lambda t: _in_place(t, t.tensor([7]), ("floor_divide_", 2.5))),
    ("bool tensor |= an integer tensor", RuntimeError,
     lambda t: _in_place(t, t.tensor([True]), ("bitwise_or_", t.tensor([2])))),
    # issue 11: gradients of integer results, in-place, assigned gradients, hooks, copies
    ("backward through floor_divide", RuntimeError, lambda t: (_leaf(t) // 2).sum().backward()),
    ("backward of remainder(number, tensor)", RuntimeError,
     lambda t: (7.0 % _leaf(t)).sum().backward()),
    ("requires_grad = True on an integer tensor", RuntimeError,
     lambda t: setattr(t.tensor([1, 2]), "requires_grad", True)),
    ("requires_grad = False on a non-leaf", RuntimeError,
     lambda t: setattr(_leaf(t) * 2, "requires_grad", False)),
    ("an in-place op on a leaf that requires grad", RuntimeError, lambda t: _leaf(t).add_(1)),
    ("assign .grad of another dtype", RuntimeError,
     lambda t: _assign_grad(t, t.ones(3, dtype=t.float64))),
    ("assign .grad of another shape", RuntimeError, lambda t: _assign_grad(t, t.ones(2))),
    ("a hook returning another dtype", RuntimeError,
     lambda t: _hook_changes(t, lambda g: g.double())),
    ("a hook returning another shape", RuntimeError,
     lambda t: _hook_changes(t, lambda g: g.sum())),
    ("deepcopy of a non-leaf", RuntimeError, lambda t: copy.deepcopy(_leaf(t) * 2)),
    ("numpy() of a tensor that requires grad", RuntimeError, lambda t: _leaf(t).numpy()),
    ("a NumPy ufunc on a tensor that requires grad", RuntimeError, _numpy_ufunc),
    ("f'{x:.2f}' of a 2-element tensor", TypeError, _format),
]


def _raised(lib, misuse):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", DeprecationWarning)  # PyTorch's, before its error
            misuse(lib)
    except Exception as exc:  # noqa: BLE001 - the class is what the table compares
        return exc
    return None


@pytest.mark.parametrize(("row", "expected", "misuse"), ROWS, ids=[r[0] for r in ROWS])
def test_kit_raises_pytorchs_class(row, expected, misuse):
    exc = _raised(kt, misuse)
    assert exc is not None, f"{row}: kit raised nothing; PyTorch raises {expected.__name__}"
    assert isinstance(exc, expected), f"{row}: kit raised {type(exc).__mro__}: {exc}"
    assert not isinstance(exc, AssertionError)


@pytest.mark.parametrize(("row", "expected", "misuse"), ROWS, ids=[r[0] for r in ROWS])
def test_the_stored_class_is_pytorchs(row, expected, misuse):
    torch = pytest.importorskip("torch", reason="the stored classes were taken from PyTorch 2.13")
    exc = _raised(torch, misuse)
    assert exc is not None, f"{row}: PyTorch raised nothing"
    assert isinstance(exc, expected), f"{row}: PyTorch raised {type(exc).__name__}: {exc}"


def main():
    width = max(len(row) for row, _, _ in ROWS)
    print(f"{'misuse':{width}}  {'PyTorch':22}  kit")
    for row, expected, misuse in ROWS:
        exc = _raised(kt, misuse)
        print(f"{row:{width}}  {expected.__name__:22}  {type(exc).__name__}")


if __name__ == "__main__":
    main()
