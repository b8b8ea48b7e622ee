"""`mx.sym` / `mx.symbol`: MXNet's symbolic graphs are outside kit.mx. Every name exists and
raises NotImplementedError saying what to write instead (never an AttributeError).

>>> import kit.mx as mx
>>> mx.sym.Variable("data")  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
NotImplementedError: mx.sym.Variable: kit.mx has no symbolic graphs. Fix: write ...
"""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(
        f"mx.sym.{name}: kit.mx has no symbolic graphs. Fix: write the model as a gluon "
        f"HybridBlock (hybrid_forward(self, F, x) with F = mx.nd; hybridize() is accepted and "
        f"runs eagerly), or with mx.nd ops inside mx.autograd.record()"
    )
