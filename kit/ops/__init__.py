"""The op set, one module per family; kit.ops's names are generated from the op registry.

Every op is declared once, in its family file (kit/ops/_registry.py says how); this module
exports each declared op under its Python name, and kit/_tensor_methods.py makes the Tensor's
operators and methods from the same declarations.

Primitives (own gradient code): elementwise, reductions, movement, linalg, losses, bitwise
(remainder, fmod), composite.relu/softmax/log_softmax, and the module layer's nn (linear, erf)
and conv (conv2d, max_pool2d) (imported here, so that kit.func's vmap rule table, built from the
registry when kit is imported, has them too).
Composites (none): sorting.msort, composite.mse_loss, linalg.dot/mm/outer,
movement.movedim/broadcast_to, extra, norms.
The ops real programs call (issue 12): primitives in elementwise_math (rounding, inverse
trigonometry, erfinv, nan_to_num...), selection (nonzero, unique), square_matrices (det, inv,
solve, cholesky, eigh) and view_ops (unbind, split); composites in rearrange, statistics,
signal and vectors.
The Tensor methods and torch functions PyTorch programs call: primitives in elementwise_more
(tan, erfc, lgamma, digamma, logaddexp, xlogy, logit, copysign...), composites there (fmax,
nansum...) and in shapes_more (repeat, tensor_split, scatter, cummax, cross, mv...).
"""

from __future__ import annotations

from kit.ops import (
    bitwise,
    composite,
    conv,  # noqa: F401 - imported to declare its ops (not in __all__: see below)
    elementwise,
    elementwise_math,
    elementwise_more,
    extra,
    linalg,
    movement,
    nn,  # noqa: F401 - the same
    norms,
    rearrange,
    reductions,
    selection,
    shapes_more,
    signal,
    sorting,
    square_matrices,
    statistics,
    vectors,
    view_ops,
)
from kit.ops._registry import OPS

globals().update({op.fn.__name__: op.fn for op in OPS.values() if op.public})
concatenate = movement.cat  # NumPy's name for cat

# NOTE: conv and nn are left out of __all__: `from kit.ops import *` in kit/__init__ would make
# kit.nn this module instead of the module layer.
__all__ = ["bitwise", "composite", "concatenate", "elementwise", "extra", "linalg", "movement",
           "norms",
           "reductions", "sorting", "view_ops"]
# the ops real programs need (issue 12)
__all__ += ["elementwise_math", "rearrange", "selection", "signal", "square_matrices",
            "statistics", "vectors"]
# the Tensor methods and torch functions PyTorch programs call
__all__ += ["elementwise_more", "shapes_more"]
__all__ += sorted(op.fn.__name__ for op in OPS.values() if op.public)  # the generated names


from kit import _tensor_methods  # noqa: E402 - it needs the ops above

_tensor_methods.install()
