"""gluon file I/O: Block.save_parameters / load_parameters by structural names ('0.weight'),
ParameterDict.save / load by full names, MXNet's rules for missing, extra, mis-shaped and
mis-typed parameters, and loading into a fresh, uninitialised network."""

import numpy as np
import pytest

import kit.mx as mx
from kit.mx import nd
from kit.mx.gluon import nn


def mlp(prefix=None):
    net = nn.Sequential(prefix=prefix)
    with net.name_scope():
        net.add(nn.Dense(8, activation="tanh"), nn.Dense(3))
    return net


def test_save_and_load_parameters_by_structural_names(tmp_path):
    net = mlp()
    net.initialize(mx.init.Xavier())
    x = nd.array(np.random.rand(3, 4))
    y = net(x)
    path = str(tmp_path / "mlp.params")
    net.save_parameters(path)
    with np.load(path) as archive:
        assert sorted(archive.files) == ["0.bias", "0.weight", "1.bias", "1.weight"]
    clone = mlp()  # uninitialised and of unknown shapes: loading creates the data
    clone.load_parameters(path)
    np.testing.assert_array_equal(clone(x).asnumpy(), y.asnumpy())
    other = mlp()
    other.initialize()
    other(x)
    other.load_parameters(path, ctx=mx.cpu())
    np.testing.assert_array_equal(other(x).asnumpy(), y.asnumpy())


def test_load_parameters_missing_extra_and_dtype_errors(tmp_path):
    small = nn.Sequential()
    small.add(nn.Dense(3, in_units=4))
    small.initialize()
    path = str(tmp_path / "small.params")
    small.save_parameters(path)
    big = mlp()
    big.initialize()
    big(nd.ones((1, 4)))
    with pytest.raises(AssertionError, match="'1.weight' is missing.*allow_missing=True"):
        big.load_parameters(path)
    with pytest.raises(AssertionError, match="shape incompatible expected"):
        big.load_parameters(path, allow_missing=True)  # 0.weight is (8, 4), the file's (3, 4)
    tiny = nn.Sequential()
    tiny.add(nn.Dense(3, in_units=4))
    tiny.load_parameters(path)
    tiny.add(nn.Dense(1, in_units=3))
    with pytest.raises(AssertionError, match="missing"):
        tiny.load_parameters(path)
    lone = nn.Sequential()
    with pytest.raises(AssertionError, match="ignore_extra=True"):
        lone.load_parameters(path)
    double = nn.Sequential()
    double.add(nn.Dense(3, in_units=4, dtype="float64"))
    with pytest.raises(AssertionError, match="cast_dtype=True"):
        double.load_parameters(path)
    double.load_parameters(path, cast_dtype=True)
    assert double[0].weight.data().dtype == np.float64


def test_parameter_dict_save_and_load_by_full_name(tmp_path):
    net = mlp(prefix="a_")
    net.initialize()
    net(nd.ones((1, 4)))
    path = str(tmp_path / "full.params")
    net.collect_params().save(path, strip_prefix="a_")
    twin = mlp(prefix="b_")
    twin.collect_params().load(path, restore_prefix="b_")
    np.testing.assert_array_equal(twin(nd.ones((1, 4))).asnumpy(), net(nd.ones((1, 4))).asnumpy())


def test_load_parameters_reads_prefix_stripped_full_names(tmp_path):
    net = mlp(prefix="old_")
    net.initialize()
    x = nd.ones((2, 4))
    y = net(x)
    path = str(tmp_path / "legacy.params")
    net.collect_params().save(path, strip_prefix="old_")
    new = mlp(prefix="new_")
    new.load_parameters(path)
    np.testing.assert_array_equal(new(x).asnumpy(), y.asnumpy())
    single = nn.Dense(2, in_units=3)  # a leaf Block's structural names have no dot either
    single.initialize()
    single.save_parameters(str(tmp_path / "single.params"))
    twin = nn.Dense(2, in_units=3)
    twin.load_parameters(str(tmp_path / "single.params"))
    np.testing.assert_array_equal(twin.weight.data().asnumpy(), single.weight.data().asnumpy())
