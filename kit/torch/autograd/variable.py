"""`torch.autograd.Variable`, kept for old code: since PyTorch 0.4 a Variable is a Tensor.

`Variable(t, requires_grad=True)` gives a tensor sharing t's storage, cut from t's graph, with
that flag (as PyTorch's); `isinstance(t, Variable)` is true of every Tensor.

>>> import kit.torch as torch
>>> from kit.torch.autograd import Variable
>>> v = Variable(torch.ones(2), requires_grad=True)
>>> v.requires_grad, isinstance(v, Variable)
(True, True)
"""

from kit._tensor import Tensor

__all__ = ["Variable"]


class _VariableType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableType):
    """A Tensor, under its pre-0.4 name."""

    def __new__(cls, data, requires_grad=False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
