"""`save` / `load` of tensors, dicts and state dicts, as torch.save / torch.load.

The file is a zip archive: `data.pkl`, the pickled object with every tensor replaced by a
reference, and one NumPy `.npy` file per tensor (written and read with allow_pickle=False).
`load` defaults to `weights_only=True`, as PyTorch 2.6+ does: the unpickler then builds only
tensors, containers and plain values, and refuses any other class (a pickled Module, a function)
unless the caller passes `weights_only=False` for a file it trusts, or allow-lists the class
with `add_safe_globals`.

>>> import io, kit
>>> from kit.serialization import load, save
>>> buf = io.BytesIO()
>>> save({"w": kit.ones(2)}, buf)
>>> _ = buf.seek(0)
>>> load(buf)
{'w': tensor([1., 1.])}
"""

from __future__ import annotations

import io
import os
import pickle
import zipfile

import numpy as np

from kit._creation import from_numpy
from kit._tensor import Tensor

_SAFE = {
    ("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"),
    ("builtins", "complex"), ("builtins", "slice"), ("builtins", "bytearray"),
}
_USER_SAFE = {}


def add_safe_globals(safe_globals):
    """Allow `load(..., weights_only=True)` to build these classes or functions."""
    for obj in safe_globals:
        _USER_SAFE[(obj.__module__, obj.__qualname__)] = obj


def get_safe_globals():
    return list(_USER_SAFE.values())


def save(obj, f, pickle_protocol=2):
    """Write `obj` (a tensor, a state dict, any picklable object holding tensors) to `f`, a
    path or a binary file object."""
    arrays, ids = [], {}

    class _Pickler(pickle.Pickler):
        def persistent_id(self, value):
            if isinstance(value, Tensor):
                from kit.nn.parameter import Parameter

                kind = "parameter" if isinstance(value, Parameter) else "tensor"
                array, requires_grad = value.detach().cpu().numpy(), value.requires_grad
            elif type(value) is np.ndarray:
                kind, array, requires_grad = "ndarray", value, False
            else:
                return None
            if id(value) not in ids:
                ids[id(value)] = len(arrays)
                arrays.append(array)
            return ("kit.tensor", ids[id(value)], kind, requires_grad)

    body = io.BytesIO()
    _Pickler(body, protocol=pickle_protocol).dump(obj)
    with _open(f, "w") as zf:
        zf.writestr("data.pkl", body.getvalue())
        for i, array in enumerate(arrays):
            npy = io.BytesIO()
            np.save(npy, array, allow_pickle=False)
            zf.writestr(f"tensors/{i}.npy", npy.getvalue())


def load(f, map_location=None, weights_only=True):
    """Read what `save` wrote. `map_location` ('cpu' or 'gpu') moves every tensor there."""
    with _open(f, "r") as zf:
        names = set(zf.namelist())
        if "data.pkl" not in names:
            raise RuntimeError(
                "kit.load: this file was not written by kit's save (no data.pkl inside). Note "
                "that files written by real PyTorch cannot be read by kit"
            )
        built = {}

        def tensor_at(pid):
            _, index, kind, requires_grad = pid
            if index not in built:
                with zf.open(f"tensors/{index}.npy") as member:
                    array = np.load(io.BytesIO(member.read()), allow_pickle=False)
                built[index] = _rebuild(array, kind, requires_grad, map_location)
            return built[index]

        unpickler = (_WeightsUnpickler if weights_only else pickle.Unpickler)(
            io.BytesIO(zf.read("data.pkl"))
        )
        unpickler.persistent_load = tensor_at
        return unpickler.load()


class _WeightsUnpickler(pickle.Unpickler):
    """Builds only tensors, containers and plain values: no code from the file runs."""

    def find_class(self, module, name):
        if (module, name) in _SAFE:
            return super().find_class(module, name)
        if (module, name) in _USER_SAFE:
            return _USER_SAFE[(module, name)]
        raise pickle.UnpicklingError(
            f"Weights only load failed: the file holds {module}.{name}, which is not an allowed "
            f"global (with weights_only=True, the default, load builds only tensors, "
            f"containers and plain values, so that loading cannot run code from the file). If "
            f"you trust the file's source: load(f, weights_only=False); or allow-list the class "
            f"with kit.serialization.add_safe_globals([{name}]). To avoid the problem, save "
            f"model.state_dict() rather than the model"
        )


def _rebuild(array, kind, requires_grad, map_location):
    if kind == "ndarray":
        return array
    t = from_numpy(array)
    if map_location is not None:
        t = t.to(map_location)
    if kind == "parameter":
        from kit.nn.parameter import Parameter

        return Parameter(t, requires_grad)
    return t.requires_grad_(requires_grad)


def _open(f, mode):
    if isinstance(f, (str, os.PathLike)):
        return zipfile.ZipFile(f, mode, compression=zipfile.ZIP_STORED)
    return zipfile.ZipFile(f, mode)


