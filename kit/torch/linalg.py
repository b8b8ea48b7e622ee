"""`torch.linalg`'s norms on kit's ops (kit/ops/norms.py).

>>> import kit.torch as torch
>>> torch.linalg.norm(torch.tensor([[3.0, 0.0], [0.0, 4.0]]))
tensor(5.)
"""

from kit.ops.norms import linalg_norm as norm
from kit.ops.norms import matrix_norm, vector_norm

__all__ = ["matrix_norm", "norm", "vector_norm"]
