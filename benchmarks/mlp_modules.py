"""The MLP step of benchmarks/mlp.py written as lesson code writes it: `nn.Linear` layers in an
`nn.Sequential`, `F.cross_entropy`, `optim.SGD`, `zero_grad(set_to_none=True)` (after the
update, when the bare step drops its gradients).

Compared with the same step on bare tensors (mlp.kit_step_fn): the module layer's cost is the
difference, and the target is at most 5% over the bare step. The weights start equal to
mlp.make_data's (a Linear stores W transposed, (out, in), as PyTorch's does).
"""

from __future__ import annotations

import numpy as np

from benchmarks import mlp


def module_step_fn(torch, x, y, params):
    """One step with torch.nn + torch.optim of `torch` (kit.torch or PyTorch)."""
    nn = torch.nn
    layers = []
    for i, (w, _) in enumerate(params):
        layers.append(nn.Linear(w.shape[0], w.shape[1]))
        if i < len(params) - 1:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    linears = [m for m in model if isinstance(m, nn.Linear)]
    model.load_state_dict({
        f"{2 * i}.{name}": torch.tensor(np.ascontiguousarray(a.T if name == "weight" else a))
        for i, (w, b) in enumerate(params) for name, a in (("weight", w), ("bias", b))
    })
    opt = torch.optim.SGD(model.parameters(), lr=mlp.LR)
    xt, yt = torch.tensor(x), torch.tensor(y)
    cross_entropy = torch.nn.functional.cross_entropy
    # NOTE: views of the weights, made once (the optimiser updates them in place), as the bare
    # step returns its live arrays and the gluon step its views: returning the numbers must not
    # time extra tensors and arrays made per call.
    views = [a for m in linears for a in (m.weight.detach().numpy().T, m.bias.detach().numpy())]

    def step():
        loss = cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()
        # NOTE: the gradients are let go right after the update, where the bare step lets go
        # of its own (p.grad = None): held through the next forward instead (zero_grad before
        # backward), the step also times where the allocator then puts that forward's arrays
        # (measured: up to 3% of the step), which is not the module layer's cost.
        opt.zero_grad()
        return loss.item(), views

    return step


def impls(torch=None, batch=64, sizes=(784, 256, 256, 10)):
    """{name: step}: kit's module step ("kit"), the bare kit step ("bare"), NumPy and, when
    given, PyTorch's module step, all from the same start."""
    import kit.torch

    x, y, params = mlp.make_data(batch, sizes)
    out = {
        "kit": module_step_fn(kit.torch, x, y, params),
        "bare": mlp.kit_step_fn(x, y, params),
        "numpy": mlp.numpy_step_fn(x, y, params),
    }
    if torch is not None:
        out["torch"] = module_step_fn(torch, x, y, params)
    return out
