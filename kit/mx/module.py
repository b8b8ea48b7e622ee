"""`mx.mod` / `mx.module`: MXNet's symbolic Module API is outside kit.mx. Every name exists and
raises NotImplementedError saying what to write instead (never an AttributeError).

>>> import kit.mx as mx
>>> mx.mod.Module  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
NotImplementedError: mx.mod.Module: kit.mx has no symbolic Module API. Fix: ...
"""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(
        f"mx.mod.{name}: kit.mx has no symbolic Module API. Fix: train a gluon Block with "
        f"gluon.Trainer: inside mx.autograd.record() compute the loss, then loss.backward() and "
        f"trainer.step(batch_size)"
    )
