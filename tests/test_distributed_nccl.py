"""GPU tensors through NCCL (kit.distributed.nccl): on tests/fake_cupy.py's GPU with
tests/fake_nccl.py (NCCL's calls done by MPI), in this process and on 2 ranks, and on real GPUs
where there are some (skipped, with the reason, elsewhere). The host-staging fallback is tested
in test_distributed_unit.py and test_distributed.py."""

import numpy as np
import pytest
from dist_helpers import mpirun, needs_mpi

import kit
import kit.distributed as dist
import kit.torch as torch
from kit import backend
from kit.distributed import nccl

pytestmark = [pytest.mark.dist, needs_mpi]


@pytest.fixture
def fake_gpu_with_nccl():
    import fake_cupy
    import fake_nccl

    dist.init()
    nccl._communicators.clear()  # each fake NCCL makes its own communicator
    with fake_cupy.installed(nccl=True):
        yield fake_nccl.CALLS
    nccl._communicators.clear()


def test_reasons_for_not_using_nccl():
    import fake_cupy

    assert nccl.unavailable_reason(kit.tensor([1.0])) == "the data is not on a GPU (NumPy array)"
    with fake_cupy.installed():
        assert nccl.unavailable_reason(kit.tensor([1.0], device="gpu")).startswith(
            "CuPy has no NCCL")
    with fake_cupy.installed(nccl=True):
        assert nccl.unavailable_reason(kit.tensor([1.0], device="gpu")) is None
        assert nccl.unavailable_reason(kit.tensor([True], device="gpu")) == (
            "NCCL does not reduce bool")
        dist.settings.nccl = False
        try:
            assert "KIT_DIST_NCCL=0" in nccl.unavailable_reason(kit.tensor([1.0], device="gpu"))
        finally:
            dist.settings.nccl = True


def test_collectives_on_gpu_tensors_stay_on_the_gpu(fake_gpu_with_nccl):
    """In a job of one, collectives have nobody to talk to and call nothing (as with MPI); the
    results still stay on the GPU. test_nccl_collectives_on_fake_gpus covers real calls."""
    x = kit.tensor([1.0, 2.0], device="gpu")
    y = dist.allreduce(x, op=dist.Sum)
    assert y.device == "gpu" and y.to("cpu").numpy().tolist() == [1.0, 2.0]
    assert dist.allreduce_(x) is x and x.device == "gpu"
    assert dist.broadcast(x, 0).device == "gpu" and dist.allgather(x).device == "gpu"
    assert fake_gpu_with_nccl == []


@pytest.mark.parametrize("n", [2, 3])
def test_nccl_collectives_on_fake_gpus(n):
    out = mpirun(n, "collectives_gpu.py", "fake").stdout
    assert sorted(line for line in out.splitlines() if line.endswith(" ok")) == [
        f"rank {r} ok" for r in range(n)], out


def test_distributed_optimizer_reduces_gpu_buffers_with_nccl(fake_gpu_with_nccl):
    calls = fake_gpu_with_nccl
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                                torch.nn.Linear(4, 2)).double().to("gpu")
    opt = dist.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5),
                                    named_parameters=model.named_parameters(),
                                    fusion_threshold_bytes=64)
    assert all(bucket.on_device for bucket in opt._reducer.buckets)
    assert all(backend.get_array_module(bucket.send) is not np for bucket in opt._reducer.buckets)
    dist.broadcast_parameters(model.state_dict())
    x = torch.ones(5, 3, dtype=kit.float64, device="gpu")
    model(x).sum().backward()
    expected = [p.grad.to("cpu").numpy().copy() for p in model.parameters()]
    opt.step()
    reduced = [c for c in calls if c[0] == "allReduce"]
    # one buffer per tensor at 64 bytes (+1 flag per parameter), last layer first
    assert [c[1] for c in reduced] == [3, 9, 5, 13]
    assert {c[2] for c in reduced} == {"NCCL_FLOAT64"}
    for p, g in zip(model.parameters(), expected, strict=True):
        assert p.grad.device == "gpu"
        np.testing.assert_allclose(p.grad.to("cpu").numpy(), g)


@pytest.mark.parametrize("n", [2, 3])
def test_nccl_on_fake_gpus_trains_like_one_process(tmp_path, n):
    """n ranks on the fake GPU, gradients and parameters through (fake) NCCL, its unique id
    broadcast over MPI (the fake refuses ranks that joined with different ids), reach the
    single-process CPU reference's weights."""
    mpirun(0, "train_torch.py", tmp_path / "ref.npz", n * 4, 4, "sgd", 600)
    out = mpirun(n, "train_torch.py", tmp_path / "dist.npz", 4, 4, "sgd", 600, 1,
                 "fake-gpu-nccl").stdout
    assert out.count("nccl: used") == n, out
    ref, got = np.load(tmp_path / "ref.npz"), np.load(tmp_path / "dist.npz")
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=0, atol=1e-10, err_msg=name)


def _gpus():
    if not backend.gpu_available():
        return 0, f"no usable GPU: {backend.gpu_unavailable_reason()}"
    import cupy

    reason = nccl.unavailable_reason(cupy.zeros(1, dtype=cupy.float32))
    if reason:
        return 0, reason
    return cupy.cuda.runtime.getDeviceCount(), None


@pytest.mark.gpu
def test_nccl_on_real_gpus(tmp_path):
    """One rank per GPU (at most 2; NCCL takes one rank per device), through real NCCL: the
    collectives, and training to the single-process CPU reference's weights."""
    count, reason = _gpus()
    if not count:
        pytest.skip(reason)
    n = min(2, count)
    out = mpirun(n, "collectives_gpu.py", "real").stdout
    assert out.count(" ok") == n, out
    mpirun(0, "train_torch.py", tmp_path / "ref.npz", n * 4, 4, "sgd", 600)
    out = mpirun(n, "train_torch.py", tmp_path / "dist.npz", 4, 4, "sgd", 600, 1, "gpu").stdout
    assert out.count("nccl: used") == n, out
    ref, got = np.load(tmp_path / "ref.npz"), np.load(tmp_path / "dist.npz")
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=0, atol=1e-10, err_msg=name)
