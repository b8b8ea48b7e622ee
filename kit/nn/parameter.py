"""`Parameter`: a leaf Tensor that a Module registers as one of its learnable weights.

>>> import kit
>>> from kit.nn import Parameter
>>> p = Parameter(kit.zeros(2))
>>> p.requires_grad, p.is_leaf
(True, True)
"""

from __future__ import annotations

from kit._tensor import Tensor
from kit.grad_mode import no_grad


class Parameter(Tensor):
    """A Tensor that is a module's weight: a leaf that requires grad unless told otherwise."""

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from kit._creation import empty

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter(data): data must be a Tensor, got {type(data).__name__}. Fix: "
                f"Parameter(kit.tensor(...))"
            )
        # NOTE: detach() shares the storage (and version counter) of `data`, as
        # torch.nn.Parameter does; the class is swapped in place since the layouts are equal.
        param = data.detach()
        param.__class__ = cls
        param.requires_grad_(requires_grad)
        return param

    def __init__(self, data=None, requires_grad=True):
        pass  # everything happened in __new__

    def __deepcopy__(self, memo):
        # NOTE: copying the slots would copy the graph edge too, and gradients of the copy would
        # flow into the original; a copy is a fresh leaf with copied data and, as PyTorch's
        # Parameter.__deepcopy__, no gradient.
        if id(self) not in memo:
            with no_grad():
                memo[id(self)] = Parameter(self.detach().clone(), self.requires_grad)
        return memo[id(self)]

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()
