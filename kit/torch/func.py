"""`torch.func`: kit's functional transforms (kit.func: vmap, grad, vjp, jacrev, jvp, ...).

`kit.torch.func` is `kit.func` under PyTorch's name; nothing is redefined here.
"""

from kit.func import *  # noqa: F403 - the same names as kit.func, as torch.func
from kit.func import __all__  # noqa: F401
