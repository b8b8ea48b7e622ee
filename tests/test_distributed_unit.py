"""kit.distributed in this process (a job of one rank): the API's checks and error messages, the
fusion plan, gradient hooks and flags, and the Horovod spellings. Multi-process behaviour is in
test_distributed.py and test_distributed_failures.py."""

import os
import subprocess
import sys

import numpy as np
import pytest
from dist_helpers import needs_mpi

import kit
import kit.distributed as dist
import kit.torch as torch
from kit.distributed import fusion, runtime

pytestmark = needs_mpi


@pytest.fixture(autouse=True)
def _initialized():
    dist.init()
    dist.init()  # idempotent


def test_a_single_process_job():
    assert (dist.rank(), dist.size(), dist.local_rank(), dist.local_size()) == (0, 1, 0, 1)
    # one process has nobody to notify: no failure handler
    assert getattr(sys.excepthook, "__module__", None) != "kit.distributed.runtime"


def test_collectives_return_new_tensors_and_check_their_arguments():
    x = kit.tensor([1.0, 2.0])
    y = dist.allreduce(x, op=dist.Sum)
    assert y is not x and y.numpy().tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="op must be kit.distributed.Average or Sum"):
        dist.allreduce(x, op="max")
    with pytest.raises(ValueError, match=r"root_rank=1 is not a rank of this job of 1"):
        dist.broadcast(x, root_rank=1)
    with pytest.raises(TypeError, match="allreduce of a tensor: expected a kit Tensor"):
        dist.allreduce(np.ones(2))
    with pytest.raises(TypeError, match="op=kit.distributed.Sum"):
        dist.allreduce(kit.tensor([1, 2]))
    assert dist.allgather(kit.tensor(3.0)).shape == (1,)


def test_broadcast_parameters_takes_state_dicts_and_named_parameters_only():
    model = torch.nn.Linear(2, 1)
    dist.broadcast_parameters(model.state_dict())
    dist.broadcast_parameters(model.named_parameters())
    with pytest.raises(TypeError, match=r"params must be a state dict or \(name, tensor\)"):
        dist.broadcast_parameters(list(model.parameters()))
    with pytest.raises(TypeError, match="expected a kit.torch.optim optimizer"):
        dist.broadcast_optimizer_state(object())


def test_the_fusion_plan_fills_buffers_last_parameter_first():
    a = kit.zeros(4, dtype=kit.float64, requires_grad=True)  # 32 bytes
    b = kit.zeros(2, dtype=kit.float64, requires_grad=True)  # 16 bytes
    c = kit.zeros(3, dtype=kit.float32, requires_grad=True)
    d = kit.zeros(5, dtype=kit.float32, requires_grad=True)
    named = [("a", a), ("b", b), ("c", c), ("d", d)]
    names = [[s.name for s in bucket.slots] for bucket in fusion._plan(named, 1 << 20)]
    assert names == [["d", "c"], ["b", "a"]]  # one buffer per dtype
    names = [[s.name for s in bucket.slots] for bucket in fusion._plan(named, 40)]
    assert names == [["d", "c"], ["b"], ["a"]]  # 16 + 32 bytes > 40
    assert [len(bucket.slots) for bucket in fusion._plan(named, 0)] == [1, 1, 1, 1]
    frozen = kit.zeros(2, requires_grad=False)
    assert len(fusion._plan([("frozen", frozen), ("a", a)], 0)) == 1


def test_reduction_keeps_none_for_parameters_without_gradient_and_accumulates():
    used = kit.tensor([1.0, 2.0], dtype=kit.float64, requires_grad=True)
    unused = kit.tensor([3.0], dtype=kit.float64, requires_grad=True)
    reducer = dist.GradientReducer([("used", used), ("unused", unused)])
    (used * used).sum().backward()
    reducer.synchronize()
    assert unused.grad is None and used.grad.numpy().tolist() == [2.0, 4.0]
    (used * 3).sum().backward()  # accumulates into .grad, as without kit.distributed
    reducer.synchronize()
    assert used.grad.numpy().tolist() == [5.0, 7.0]
    reducer.remove()
    (used * 0).sum().backward()
    assert used.grad.numpy().tolist() == [5.0, 7.0]


def test_backward_passes_per_step():
    w = kit.tensor([1.0], requires_grad=True)
    reducer = dist.GradientReducer([("w", w)], backward_passes_per_step=2)
    (w * 2).sum().backward()
    (w * 3).sum().backward()
    reducer.synchronize()
    assert w.grad.item() == 5.0
    (w * 2).sum().backward()
    (w * 2).sum().backward()
    with pytest.raises(RuntimeError, match=r"'w' was computed 3 times .*"
                                           r"backward_passes_per_step=3"):
        (w * 2).sum().backward()
    with pytest.raises(ValueError, match="at least 1"):
        dist.GradientReducer([("w", w)], backward_passes_per_step=0)


def test_distributed_optimizer_keeps_the_class_and_steps():
    model = torch.nn.Linear(2, 1)
    base = torch.optim.SGD(model.parameters(), lr=0.5)
    opt = dist.DistributedOptimizer(base, named_parameters=model.named_parameters())
    assert isinstance(opt, torch.optim.SGD) and type(opt).__name__ == "SGD"
    assert opt.param_groups is base.param_groups
    before = model.weight.detach().clone()

    def closure():
        opt.zero_grad()
        loss = model(torch.ones(1, 2)).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert isinstance(loss, kit.Tensor)
    np.testing.assert_allclose(model.weight.detach().numpy(), before.numpy() - 0.5)
    opt.zero_grad()
    model(torch.ones(1, 2)).sum().backward()
    opt.synchronize()
    model.weight.grad.mul_(0)  # e.g. clipping between synchronize() and step()
    opt.step()
    np.testing.assert_allclose(model.weight.detach().numpy(), before.numpy() - 0.5)


def test_distributed_optimizer_checks_named_parameters():
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match=r"positions \[1\] are not in it"):
        dist.DistributedOptimizer(opt, named_parameters=[("weight", model.weight)])
    with pytest.raises(ValueError, match=r"must be unique; repeated: \['w'\]"):
        dist.DistributedOptimizer(opt, named_parameters=[("w", model.weight), ("w", model.bias)])
    with pytest.raises(ValueError, match=r"sequence of \(name, parameter\) pairs"):
        dist.DistributedOptimizer(opt, named_parameters=model.parameters())


def test_a_dead_peer_on_this_machine_is_named():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    saved = runtime._state.peers
    runtime._state.peers = [(runtime.socket.gethostname(), child.pid)] * 2
    try:
        with pytest.raises(dist.RankFailedError, match=rf"rank 1 failed: its process \(pid "
                                                       rf"{child.pid}\) is no longer running"):
            runtime._check_peers_alive("a test")
    finally:
        runtime._state.peers = saved


def test_horovod_torch_spelling():
    import kit.horovod.torch as hvd

    hvd.init()
    assert (hvd.rank(), hvd.size()) == (0, 1) and hvd.Average is dist.Average
    assert hvd.allreduce(kit.tensor([2.0]), op=hvd.Sum).item() == 2.0
    assert hvd.broadcast_object({"a": 1}) == {"a": 1} and hvd.allgather_object(5) == [5]


def test_horovod_mxnet_optimizer_wrapper():
    from mini_mxnet import SGD, Parameter, Trainer

    import kit.mx as mx
    from kit.horovod.mxnet import DistributedOptimizer, DistributedTrainerMixin

    with pytest.raises(TypeError, match=r"mx.optimizer.SGD\(learning_rate=0.01\)"):
        DistributedOptimizer(object())
    sgd = SGD(learning_rate=0.5)
    opt = DistributedOptimizer(sgd)
    opt.rescale_grad = 0.5  # a Trainer's write reaches the wrapped optimizer
    assert sgd.rescale_grad == 0.5 and opt.learning_rate == 0.5
    w, g = mx.nd.array([1.0, 2.0]), mx.nd.array([2.0, 2.0])
    opt.update_multi_precision(0, w, g, opt.create_state(0, w))
    assert w.asnumpy().tolist() == [0.5, 1.5]
    grads = [mx.nd.array([1.0]), mx.nd.array([2.0, 3.0])]  # MXNet 2's aggregated update
    opt._do_allreduce([0, 1], grads)
    assert [g.asnumpy().tolist() for g in grads] == [[1.0], [2.0, 3.0]]
    trainer_class = type("T", (DistributedTrainerMixin, Trainer), {})
    with pytest.warns(UserWarning, match="We have unwrapped it for you"):
        trainer = trainer_class([Parameter("w", np.ones(2))], opt)
    assert trainer._optimizer is sgd


def test_horovod_mxnet_trainer_needs_gluon():
    import kit.mx as mx
    from kit.horovod import mxnet as hvd

    if hasattr(mx, "gluon"):
        assert issubclass(hvd.DistributedTrainer, mx.gluon.Trainer)
    else:
        with pytest.raises(ImportError, match="has no kit.mx.gluon yet"):
            hvd.DistributedTrainer  # noqa: B018
    from kit.mx.contrib import horovod

    assert horovod is hvd


def test_settings_read_the_environment():
    code = ("import kit.distributed as d; s = d.settings; "
            "print(s.timeout, s.fusion_threshold_bytes, s.abort_grace)")
    env = {"KIT_DIST_TIMEOUT": "7", "HOROVOD_FUSION_THRESHOLD": "1024",
           "KIT_DIST_ABORT_GRACE": "0.5"}
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                         capture_output=True, text=True, check=True).stdout
    assert out.split() == ["7.0", "1024", "0.5"]


def test_allreduce_in_place_writes_the_tensor_and_records_the_change():
    w = kit.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()  # saves w for backward
    assert dist.allreduce_(w, op=dist.Sum) is w
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    view = kit.tensor(np.arange(6.0).reshape(2, 3)).t()  # not contiguous: reduced via a copy
    assert dist.allreduce_(view).numpy().tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]


def test_reduction_starts_during_backward():
    """With one buffer per tensor, the last layer's buffers are already started when backward
    reaches the first layer (whose gradients come last)."""
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    reducer = dist.GradientReducer(list(model.named_parameters()), fusion_threshold_bytes=0)
    started_before_first_layer = []
    model[0].weight.register_hook(lambda g: started_before_first_layer.append(
        reducer.next_launch))
    model(torch.ones(5, 3)).sum().backward()
    assert started_before_first_layer[0] >= 2  # 2.weight and 2.bias were on their way
    assert reducer.next_launch == 4  # every buffer started before synchronize()
    reducer.synchronize()
    assert reducer.next_launch == 0


def test_reduction_under_create_graph():
    w = kit.tensor([1.0, 2.0], dtype=kit.float64, requires_grad=True)
    reducer = dist.GradientReducer([("w", w)])
    (w * w * w).sum().backward(create_graph=True)  # w.grad = 3 w^2, itself differentiable
    reducer.synchronize()
    assert w.grad.detach().numpy().tolist() == [3.0, 12.0]


def test_gpu_tensors_are_staged_through_host_memory():
    """On the fake CuPy (tests/fake_cupy.py): results stay on the tensor's device."""
    import fake_cupy

    with fake_cupy.installed():
        x = kit.tensor([1.0, 2.0], device="gpu")
        assert dist.allreduce(x).device == "gpu" and dist.broadcast(x, 0).device == "gpu"
        assert dist.allgather(x).device == "gpu"
        assert dist.allreduce_(x, op=dist.Sum) is x and x.device == "gpu"
        model = torch.nn.Linear(3, 2).to("gpu")
        opt = dist.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5),
                                        named_parameters=model.named_parameters())
        dist.broadcast_parameters(model.state_dict())
        model(torch.ones(4, 3, device="gpu")).sum().backward()
        expected = model.bias.detach().to("cpu").numpy() - 0.5 * 4
        opt.step()
        assert model.bias.grad.device == "gpu"
        np.testing.assert_allclose(model.bias.detach().to("cpu").numpy(), expected)
