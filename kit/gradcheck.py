"""Check analytical gradients against central finite differences.

kit's version of torch.autograd.gradcheck: same tolerance rule, `|a - n| <= atol + rtol * |n|`
per Jacobian block, but it upcasts inputs to float64 by itself (float32 differences are too noisy
to check anything) and its failure report names the output, the input, the worst element and both
values instead of printing whole matrices.
"""

from __future__ import annotations

import warnings

import numpy as np

from kit import backend
from kit._tensor import Tensor, float64
from kit.autograd import grad
from kit.grad_mode import enable_grad


class GradcheckError(RuntimeError):
    """Raised by gradcheck when an analytical gradient disagrees with the numerical one."""


def as_float64(inputs, warn=True):
    """The inputs with float tensors copied to float64 (requires_grad kept); by default warns
    which ones were upcast. kit.viz's gradcheck view uses it too, without the warning."""
    inputs = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
    prepared, upcast = [], []
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and x.dtype.kind == "f" and x.dtype != float64:
            upcast.append(i)
            t = Tensor(x._data.astype(float64), requires_grad=x.requires_grad)
            prepared.append(t)
        else:
            prepared.append(x)
    if upcast and warn:
        warnings.warn(
            f"gradcheck: inputs {upcast} are float32/float16; checking them in float64 instead "
            f"(finite differences in low precision are too noisy to check anything)",
            UserWarning,
            stacklevel=3,
        )
    return prepared


def _outputs(func, inputs):
    with enable_grad():
        out = func(*inputs)
    return out if isinstance(out, (tuple, list)) else (out,)


def numerical_jacobian(func, inputs, eps=1e-6):
    """J[o][i] of shape (out[o].size, in[i].size) by central differences, for inputs that require
    grad."""
    outs = _outputs(func, inputs)
    jac = [[None] * len(inputs) for _ in outs]
    for i, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        data = x._data
        cols = [np.zeros((_size(o), data.size)) for o in outs]
        for k in range(data.size):
            # NOTE: element k in C order, written through an index: a reshape(-1) of a
            # non-contiguous input would be a copy, and perturbing it would not change x.
            at = np.unravel_index(k, data.shape)
            orig = data[at].item()
            data[at] = orig + eps
            plus = [_host(o) for o in _outputs(func, inputs)]
            data[at] = orig - eps
            minus = [_host(o) for o in _outputs(func, inputs)]
            data[at] = orig
            for o, (p, m) in enumerate(zip(plus, minus, strict=True)):
                if p is not None:
                    cols[o][:, k] = (p - m).reshape(-1) / (2 * eps)
        for o in range(len(outs)):
            jac[o][i] = cols[o]
    return jac


def analytical_jacobian(func, inputs):
    """J[o][i] from the backward pass, one row per output element."""
    outs = _outputs(func, inputs)
    wrt = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    jac = [[None] * len(inputs) for _ in outs]
    for o, out in enumerate(outs):
        if not isinstance(out, Tensor) or not out.requires_grad:
            continue
        rows = {i: np.zeros((out._data.size, x._data.size)) for i, x in enumerate(inputs)
                if isinstance(x, Tensor) and x.requires_grad}
        xp = backend.get_array_module(out._data)
        for r in range(out._data.size):
            seed = xp.zeros(out._data.size, dtype=out.dtype)
            seed[r] = 1
            gs = grad(out, wrt, Tensor(seed.reshape(out.shape)), retain_graph=True,
                      allow_unused=True)
            for (i, _), g in zip(rows.items(), gs, strict=True):
                if g is not None:
                    rows[i][r] = _host(g).reshape(-1)
        for i, m in rows.items():
            jac[o][i] = m
    return jac


def _size(t):
    return int(t._data.size) if isinstance(t, Tensor) else 0


def _host(t):
    if not isinstance(t, Tensor):
        return None
    d = t._data
    # NOTE: a copy: an output may be (a view of) an input that the next perturbation changes.
    return np.array(backend.to_device(d, "cpu"), dtype=np.float64)


# PyTorch's other options: accepted so that its calls run unchanged; kit's check is always the
# full, deterministic, dense one, so they change nothing. Any other keyword is a typo.
_TORCH_OPTIONS = frozenset({
    "nondet_tol", "check_undefined_grad", "check_grad_dtypes", "check_batched_grad",
    "check_batched_forward_grad", "check_forward_ad", "check_backward_ad", "fast_mode",
    "masked", "gen_non_contig_grad_outputs",
})


def _check_options(who, options):
    unknown = sorted(set(options) - _TORCH_OPTIONS)
    if unknown:
        raise TypeError(
            f"{who}() got unexpected keyword arguments {unknown}; kit accepts eps, atol, rtol, "
            f"raise_exception and PyTorch's {sorted(_TORCH_OPTIONS)}"
        )


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              **torch_options):
    """True if func's backward matches central differences for every (output, input) block.

    >>> import kit
    >>> x = kit.tensor([0.5, -1.0], dtype=kit.float64, requires_grad=True)
    >>> kit.gradcheck(kit.tanh, (x,))
    True
    """
    _check_options("gradcheck", torch_options)
    inputs = as_float64(inputs)
    numeric = numerical_jacobian(func, inputs, eps)
    analytic = analytical_jacobian(func, inputs)
    for o, (n_row, a_row) in enumerate(zip(numeric, analytic, strict=True)):
        for i, (n, a) in enumerate(zip(n_row, a_row, strict=True)):
            if n is None:
                continue
            if a is None:
                a = np.zeros_like(n)
            err = np.abs(a - n) - (atol + rtol * np.abs(n))
            if err.size and err.max() > 0:
                if not raise_exception:
                    return False
                r, c = np.unravel_index(int(err.argmax()), err.shape)
                raise GradcheckError(
                    f"Jacobian mismatch for output {o} with respect to input {i}: the worst "
                    f"element is d out[{o}].flat[{r}] / d in[{i}].flat[{c}], numerical "
                    f"{n[r, c]:.6g} vs analytical {a[r, c]:.6g} (difference "
                    f"{abs(a[r, c] - n[r, c]):.3g}, allowed {atol + rtol * abs(n[r, c]):.3g}). "
                    f"{int((err > 0).sum())} of {err.size} elements disagree.\n"
                    f"numerical:\n{n}\nanalytical:\n{a}"
                )
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **torch_options):
    """gradcheck of the first backward itself: checks second derivatives."""
    _check_options("gradgradcheck", torch_options)
    inputs = as_float64(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        gen = np.random.default_rng(0)
        grad_outputs = [
            Tensor(backend.get_array_module(o._data).asarray(
                gen.standard_normal(o.shape)).astype(float64), requires_grad=True)
            for o in outs if isinstance(o, Tensor) and o.requires_grad
        ]
    grad_outputs = list(grad_outputs)
    wrt_index = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    n_in = len(inputs)

    def first_grads(*args):
        xs, gos = args[:n_in], args[n_in:]
        outs = [o for o in _outputs(func, xs) if isinstance(o, Tensor) and o.requires_grad]
        gs = grad(outs, [xs[i] for i in wrt_index], list(gos), create_graph=True,
                  allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception)
