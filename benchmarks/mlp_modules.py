"""The MLP step of benchmarks/mlp.py written as lesson code writes it: `nn.Linear` layers in an
`nn.Sequential`, `F.cross_entropy`, `optim.SGD`, `zero_grad(set_to_none=True)`.

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

    def step():
        loss = cross_entropy(model(xt), yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item(), [a for m in linears for a in (m.weight.detach().numpy().T,
                                                          m.bias.detach().numpy())]

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
