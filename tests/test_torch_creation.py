"""Creation the way real PyTorch programs write it: the default dtype and device, `*_like`,
`size=` and `generator=`, `torch.full`'s dtype, the math constants; and two autograd names old
code uses, `Tensor.output_nr` and `autograd.function.InplaceFunction`. Each test runs on
kit.torch and on real PyTorch with the same code."""

from __future__ import annotations

import math

import fake_cupy
import numpy as np
import pytest
from torch_oracle import libraries

import kit
import kit.torch as ktorch

LIBRARIES = libraries()


@pytest.fixture
def float64_default(request):
    """The default dtype set to float64 for the test, and float32 again after it."""
    torch = request.param
    torch.set_default_dtype(torch.float64)
    try:
        yield torch
    finally:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("float64_default", LIBRARIES, indirect=True)
def test_set_default_dtype_reaches_floats_factories_promotion_and_layers(float64_default):
    torch = float64_default
    assert torch.get_default_dtype() == torch.float64
    made = [torch.tensor([1.5]), torch.tensor(2.0), torch.zeros(2), torch.ones(1), torch.empty(1),
            torch.randn(2), torch.rand(2), torch.arange(0.0, 1.0), torch.linspace(0, 1, 3),
            torch.eye(2), torch.full((2,), 1.5), torch.Tensor([1.0]),
            torch.tensor([1, 2]) * 2.5, torch.tensor([1, 2]).exp(),
            torch.tensor([1, 3]) / torch.tensor([2, 2]), torch.nn.Linear(2, 3).weight]
    assert [t.dtype for t in made] == [torch.float64] * len(made)
    kept = [torch.tensor(np.float32([1.0])), torch.ones(1, dtype=torch.float32) * 2.5,
            torch.arange(3), torch.full((1,), 3)]
    assert [t.dtype for t in kept] == [torch.float32, torch.float32, torch.int64, torch.int64]


@pytest.mark.parametrize("torch", LIBRARIES)
def test_default_dtype_accepts_floats_only(torch):
    assert torch.get_default_dtype() == torch.float32
    with pytest.raises(TypeError, match="floating-point"):
        torch.set_default_dtype(torch.int64)
    torch.set_default_dtype(torch.float16)
    try:
        assert torch.tensor([1.0]).dtype == torch.float16
    finally:
        torch.set_default_dtype(torch.float32)
    assert torch.tensor([1.0]).dtype == torch.float32


@pytest.mark.parametrize("torch", LIBRARIES)
def test_set_default_device_cpu_and_none(torch):
    assert torch.get_default_device() == torch.device("cpu")
    torch.set_default_device("cpu")
    assert torch.zeros(1).device == torch.device("cpu")
    torch.set_default_device(None)
    assert torch.get_default_device() == torch.device("cpu")


def test_set_default_device_gpu_places_factories_and_layers_there():
    """On the fake GPU (tests/fake_cupy.py): factories and layers follow the default device;
    from_numpy, *_like and data already on a device keep theirs."""
    torch = ktorch
    host = torch.ones(2)
    with fake_cupy.installed():
        torch.set_default_device("cuda")
        try:
            assert torch.get_default_device() == torch.device("cuda")
            with pytest.warns(UserWarning, match="To copy construct from a tensor"):
                copied = torch.tensor(host)
            made = [torch.tensor([1.0]), torch.zeros(2), torch.randn(2), torch.arange(3),
                    torch.full((1,), 2.0), torch.nn.Linear(2, 2).weight, copied]
            assert [t.device for t in made] == ["gpu"] * len(made)
            assert torch.from_numpy(np.ones(2)).device == "cpu"
            assert torch.zeros_like(host).device == "cpu"
            layer = torch.nn.Linear(2, 1)
            layer(torch.ones(3, 2)).sum().backward()
            assert layer.weight.grad.device == "gpu"
        finally:
            torch.set_default_device(None)
        assert torch.zeros(1).device == "cpu"
    with pytest.raises(ValueError, match="unknown device"):
        torch.set_default_device("tpu")


@pytest.mark.parametrize("torch", LIBRARIES)
def test_like_functions_take_shape_dtype_device_from_the_input(torch):
    x = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64, requires_grad=True)
    for fn in (torch.zeros_like, torch.ones_like, torch.empty_like, torch.randn_like,
               torch.rand_like):
        y = fn(x)
        assert (y.shape, y.dtype, y.device, y.requires_grad) == (x.shape, x.dtype, x.device, False)
        assert fn(x, dtype=torch.float32).dtype == torch.float32
        assert fn(x, requires_grad=True).requires_grad
        assert fn(x, device="cpu").device == x.device
    assert torch.ones_like(x).sum().item() == 3.0 and torch.zeros_like(x).sum().item() == 0.0
    assert torch.full_like(x, 7.0).tolist() == [[7.0, 7.0, 7.0]]
    assert torch.full_like(torch.tensor([1, 2]), 2.7).tolist() == [2, 2]  # cast to int64
    assert torch.rand_like(x).min().item() >= 0.0
    integers = torch.tensor([1, 2])
    with pytest.raises(NotImplementedError):
        torch.rand_like(integers)
    with pytest.raises(NotImplementedError):
        torch.randn_like(integers)
    with pytest.raises(RuntimeError, match="floating point"):
        torch.zeros_like(integers, requires_grad=True)


@pytest.mark.parametrize("torch", LIBRARIES)
def test_shape_as_size_keyword_and_full_dtype_from_its_value(torch):
    assert torch.randn(size=(2, 3)).shape == (2, 3)
    assert torch.zeros(size=[2]).shape == (2,) and torch.rand(size=(1, 4)).shape == (1, 4)
    assert torch.ones(size=(2, 2), dtype=torch.int64).dtype == torch.int64
    with pytest.raises(TypeError):
        torch.randn(2, size=(3,))
    assert torch.full((2,), 3).dtype == torch.int64
    assert torch.full((2,), True).dtype == torch.bool
    assert torch.full((2,), 0.5).dtype == torch.float32


@pytest.mark.parametrize("torch", LIBRARIES)
def test_generator_keyword_repeats_its_own_stream(torch):
    """`generator=`: the same seed gives the same numbers, whatever the global generator does
    (the numbers themselves differ from PyTorch's: kit draws with NumPy's PCG64)."""
    first = torch.randn(3, generator=torch.Generator().manual_seed(5))
    torch.manual_seed(0)
    torch.rand(10)
    again = torch.randn(3, generator=torch.Generator().manual_seed(5))
    assert torch.equal(first, again)
    picks = torch.randint(0, 100, (4,), generator=torch.Generator().manual_seed(1))
    assert torch.equal(picks, torch.randint(0, 100, (4,),
                                            generator=torch.Generator().manual_seed(1)))


@pytest.mark.parametrize("torch", LIBRARIES)
def test_math_constants(torch):
    assert (torch.pi, torch.e, torch.inf) == (math.pi, math.e, math.inf)
    assert math.isnan(torch.nan) and isinstance(torch.pi, float)
    assert torch.tensor([torch.inf, torch.nan]).tolist()[0] == math.inf


@pytest.mark.parametrize("torch", LIBRARIES)
def test_output_nr(torch):
    """Which output of its grad_fn a tensor is: 0 for leaves and single-output ops, the position
    for a Function's outputs (grad_fn.next_functions pairs each input's node with it)."""

    class Pair(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1, a * 2

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 + 2 * g2

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    first, second = Pair.apply(x)
    y = second * first
    assert [t.output_nr for t in (x, x * 2, x[1:], first, second)] == [0, 0, 0, 0, 1]
    assert [nr for _, nr in y.grad_fn.next_functions] == [1, 0]


# PyTorch 2.13 warns when a Function is instantiated; kit raises only when the instance is called
@pytest.mark.filterwarnings("ignore:.*should not be instantiated:DeprecationWarning")
@pytest.mark.parametrize("torch", LIBRARIES)
def test_inplace_function_as_old_code_writes_it(torch):
    """A clamp written against the old InplaceFunction base: `inplace` chooses between marking
    the input dirty and working on a copy; both give the straight-through gradient."""
    from_module = torch.autograd.function.InplaceFunction

    class Clamp(from_module):
        @staticmethod
        def forward(ctx, x, inplace):
            if inplace:
                ctx.mark_dirty(x)
                out = x
            else:
                out = x.clone()
            return out.clamp_(-1.0, 1.0)

        @staticmethod
        def backward(ctx, g):
            return g, None

    assert issubclass(from_module, torch.autograd.Function)
    assert from_module(inplace=True).inplace and not from_module().inplace
    x = torch.tensor([-3.0, 0.5, 2.0], requires_grad=True)
    copy = Clamp.apply(x, False)
    base = x * 1
    same = Clamp.apply(base, True)
    assert same is base and copy.tolist() == same.tolist() == [-1.0, 0.5, 1.0]
    (copy.sum() + 2 * same.sum()).backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        Clamp.apply(x, True)


def test_kit_core_spells_the_same_names():
    assert kit.get_default_dtype() == kit.float32 and kit.get_default_device() == "cpu"
    assert kit.zeros_like(kit.ones(2, dtype=kit.int64)).dtype == kit.int64
    with pytest.raises(TypeError, match="expected a Tensor.*kit.ones\\(shape\\)"):
        kit.ones_like((2, 3))
