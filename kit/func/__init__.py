"""kit.func: composable function transforms, as torch.func (functorch) and JAX.

- `grad`, `grad_and_value`, `vjp`, `jacrev`: reverse mode on kit's engine.
- `jvp`, `linearize`, `jacfwd`, `hessian`: the same results as forward mode, computed by
  reverse-over-reverse (the double-vjp trick); kit has no separate forward-mode engine.
- `functional_call(module, params, args)`: a Module as a function of its parameters.
- `vmap`: a real batching transform. Every primitive has a batching rule (kit/func/_rules*.py);
  composites batch for free, custom Functions batch through `generate_vmap_rule = True` or a
  `vmap` staticmethod.

>>> import kit
>>> from kit.func import grad, vmap
>>> xs = kit.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> vmap(grad(lambda x: (x ** 2).sum()))(xs)
tensor([[2., 4.],
        [6., 8.]])
"""

from kit.func import _rules, _rules_movement  # noqa: F401 - registers the batching rules
from kit.func._batched import BatchedTensor, dispatch
from kit.func._custom import function_apply
from kit.func._forward import hessian, jacfwd, jvp, linearize
from kit.func._functional_call import functional_call
from kit.func._grad import grad, grad_and_value, jacrev, vjp
from kit.func._vmap import vmap
from kit.ops._vmap import install

install(dispatch, function_apply)

__all__ = ["BatchedTensor", "functional_call", "grad", "grad_and_value", "hessian", "jacfwd",
           "jacrev", "jvp", "linearize", "vjp", "vmap"]
