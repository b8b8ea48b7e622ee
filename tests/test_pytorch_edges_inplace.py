"""In-place changes and views at the edges, run on kit.torch and (where installed) real PyTorch:
the unary in-place methods, fill_ and zero_ on expanded views, x[0] as a view, clone's node, a
0-d sort, erf of integers. (What each op saves, and so which in-place changes make backward
raise, is in tests/test_what_ops_save.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from tests.torch_oracle import libraries

LIBS = libraries()
UNARY = ["neg_", "exp_", "log_", "log1p_", "expm1_", "sqrt_", "tanh_", "sigmoid_", "abs_",
         "sin_", "cos_", "relu_", "sign_", "erf_"]


def values(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


@pytest.mark.parametrize("torch", LIBS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_in_place_methods_change_the_tensor_and_its_history(torch, name):
    leaf = torch.tensor([0.5, 1.5, 2.0], dtype=torch.float64, requires_grad=True)
    x = leaf * 1
    assert getattr(x, name)() is x and x._version == 1
    out = getattr(leaf.detach(), name[:-1])()
    np.testing.assert_allclose(values(x), values(out))
    x.sum().backward()
    expected = leaf.detach().clone().requires_grad_(True)
    getattr(expected, name[:-1])().sum().backward()
    np.testing.assert_allclose(values(leaf.grad), values(expected.grad))


@pytest.mark.parametrize("torch", LIBS)
def test_in_place_results_keep_the_dtype_or_are_refused(torch):
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.tensor([1, 2]).exp_()
    i = torch.tensor([5, -6])
    assert i.abs_() is i and values(i).tolist() == [5, 6] and i.dtype == torch.int64
    b = torch.tensor([True, False])
    b.logical_not_()
    assert values(b).tolist() == [0, 1] and b.dtype == torch.bool
    n = torch.tensor([0, 5], dtype=torch.uint8)
    n.bitwise_not_()
    assert values(n).tolist() == [255, 250]
    f = torch.tensor([0.0, 2.0])
    f.logical_not_()  # a float stays float: 1.0 where it was 0
    assert values(f).tolist() == [1.0, 0.0] and f.dtype == torch.float32
    with pytest.raises(RuntimeError):  # PyTorch: "bitwise_not_cpu" not implemented for 'Float'
        f.bitwise_not_()


@pytest.mark.parametrize("torch", LIBS)
def test_a_saved_output_changed_by_an_in_place_method_is_caught(torch):
    x = torch.tensor([0.5, 1.0], requires_grad=True) * 1
    x.exp_()  # exp keeps its output: the tensor x now is
    x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        x.sum().backward()


@pytest.mark.parametrize("torch", LIBS)
def test_fill_and_zero_write_an_expanded_view_other_in_place_ops_refuse(torch):
    base = torch.ones(2)
    base.expand(3, 2).fill_(3.0)
    assert values(base).tolist() == [3.0, 3.0]
    base.expand(3, 2).zero_()
    assert values(base).tolist() == [0.0, 0.0]
    base.expand(3, 2)[0] = 5.0  # a part whose elements do not share memory
    assert values(base).tolist() == [5.0, 5.0]
    for change in (lambda v: v.mul_(2), lambda v: v.__setitem__((slice(None), 0), 1.0)):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor "
                                               "refers to a single memory location"):
            change(base.expand(3, 2))
    square = torch.ones(2, 3)
    square.expand(2, 3).mul_(2)  # expand to its own shape: nothing shared
    assert values(square).tolist() == [[2.0] * 3] * 2


@pytest.mark.parametrize("torch", LIBS)
def test_backward_through_a_filled_expanded_view_raises(torch):
    leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    x = leaf.clone()
    x.expand(2, 2).fill_(5.0)
    assert values(x).tolist() == [5.0, 5.0]
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.sum().backward()


@pytest.mark.parametrize("torch", LIBS)
def test_an_integer_index_gives_a_view(torch):
    x = torch.tensor([1.0, 2.0])
    first = x[0]
    x.mul_(3)
    assert first.item() == 3.0 and first._base is x
    first.add_(1)
    assert values(x).tolist() == [4.0, 6.0]
    leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    y = leaf * 1
    y[1].mul_(3)
    y.sum().backward()
    assert values(leaf.grad).tolist() == [1.0, 3.0]


@pytest.mark.parametrize("torch", LIBS)
def test_clone_keeps_nothing_so_a_second_backward_works(torch):
    leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    y = leaf.clone()
    assert type(y.grad_fn).__name__ == "CloneBackward0"
    z = y + 1
    z.sum().backward()
    z.sum().backward()
    assert values(leaf.grad).tolist() == [2.0, 2.0]
    assert values(torch.clone(leaf)).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("torch", LIBS)
def test_sort_of_a_0d_tensor_gives_a_copy(torch):
    x = torch.tensor(1.5)
    values_, indices = torch.sort(x)
    top = torch.topk(x, 1).values
    x.zero_()
    assert values_.item() == 1.5 and top.item() == 1.5 and indices.item() == 0


@pytest.mark.parametrize("torch", LIBS)
def test_erf_of_integers_and_bools_is_float32(torch):
    for data in ([1, 2], [True, False]):
        out = torch.erf(torch.tensor(data))
        assert out.dtype == torch.float32
        np.testing.assert_allclose(values(out), [0.8427008, 0.9953223 if data[1] else 0.0],
                                   rtol=1e-6)
