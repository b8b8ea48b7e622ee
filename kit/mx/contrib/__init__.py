"""`mx.contrib`: `from kit.mx.contrib import horovod` is kit.horovod.mxnet, as MXNet's
`from mxnet.contrib import horovod` is Horovod's MXNet API."""

import sys

from kit.horovod import mxnet as horovod

sys.modules[__name__ + ".horovod"] = horovod  # `import kit.mx.contrib.horovod` works too

__all__ = ["horovod"]
