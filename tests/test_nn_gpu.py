"""The module layer on device "gpu": a model moved with .to("gpu") trains exactly as on the
CPU, and saves and loads. "fake-gpu" runs the GPU code paths on tests/fake_cupy.py everywhere;
"gpu" is a real one (skipped, with the reason, where none is usable)."""

import io

import fake_cupy
import numpy as np
import pytest
from gpu_marks import GPU_PARAM

import kit
import kit.torch as torch


@pytest.fixture(params=[GPU_PARAM, "fake-gpu"])
def gpu(request):
    if request.param == "fake-gpu":
        with fake_cupy.installed():
            yield "fake"
    else:
        yield "gpu"


def model(conv):
    nn = torch.nn
    kit.manual_seed(0)
    if conv:
        return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(),
                             nn.MaxPool2d(2), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(3, 2))
    # NOTE: the tanh GELU: the exact one's erf needs cupyx, which the fake CuPy lacks
    return nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.GELU(approximate="tanh"),
                         nn.Dropout(0.0), nn.Linear(8, 3))


def train(net, x, y, device, steps=3):
    net = net.to(device)
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x.to(device)), y.to(device))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
    return net, opt


@pytest.mark.parametrize("conv", [False, True], ids=["mlp", "cnn"])
def test_training_on_gpu_equals_cpu(gpu, conv):
    gpu = "gpu"
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((4, 1, 4, 4) if conv else (4, 4)).astype(np.float32))
    y = torch.tensor(rng.integers(0, 2 if conv else 3, size=4))
    on_cpu, _ = train(model(conv), x, y, "cpu")
    on_gpu, opt = train(model(conv), x, y, gpu)
    assert all(p.device == "gpu" for p in on_gpu.parameters())
    for (name, a), b in zip(on_gpu.state_dict().items(), on_cpu.state_dict().values(),
                            strict=True):
        np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    assert on_gpu.eval()(x.to(gpu)).device == "gpu"
    buf = io.BytesIO()
    torch.save({"model": on_gpu.state_dict(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    back = torch.load(buf, map_location="gpu")
    assert back["model"]["0.weight"].device == "gpu"
    fresh = model(conv).to(gpu)
    fresh.load_state_dict(back["model"])
    fresh_opt = torch.optim.Adam(fresh.parameters())
    fresh_opt.load_state_dict(back["opt"])
    assert fresh_opt.state[fresh[0].weight]["exp_avg"].device == "gpu"


def test_mixing_devices_names_the_fix(gpu):
    gpu = "gpu"
    layer = torch.nn.Linear(2, 2).to(gpu)
    with pytest.raises(RuntimeError, match="same device"):
        layer(torch.ones(1, 2))
