"""mx.nd.save / mx.nd.load: lists and dicts of NDArrays round-trip with their dtypes and shapes;
loading never unpickles, and other files get a clear error."""

import pickle

import numpy as np
import pytest

import kit.mx as mx


def test_a_list_round_trips_with_dtypes_and_the_exact_file_name(tmp_path):
    path = tmp_path / "arrays"
    data = [mx.nd.array([[1, 2], [3, 4]]), mx.nd.arange(3, dtype="float64"),
            mx.nd.array([1, 2], dtype="int32")]
    mx.nd.save(str(path), data)
    assert path.exists()  # no ".npz" appended, as MXNet writes exactly fname
    loaded = mx.nd.load(str(path))
    assert isinstance(loaded, list) and len(loaded) == 3
    for a, b in zip(data, loaded, strict=True):
        assert b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_a_dict_of_parameters_round_trips_and_trains_on(tmp_path):
    path = tmp_path / "params.nd"
    params = {"arg:weight": mx.nd.random.normal(shape=(3, 2)), "arg:bias": mx.nd.zeros((3,))}
    mx.nd.save(path, params)
    loaded = mx.nd.load(path)
    assert sorted(loaded) == sorted(params)
    w = loaded["arg:weight"]
    w.attach_grad()
    with mx.autograd.record():
        y = mx.nd.FullyConnected(mx.nd.ones((1, 2)), w, loaded["arg:bias"], num_hidden=3)
    y.backward()
    np.testing.assert_array_equal(w.grad.asnumpy(), np.ones((3, 2)))


def test_a_single_array_loads_as_a_list_of_one(tmp_path):
    mx.nd.save(tmp_path / "one", mx.nd.ones((2,)))
    (one,) = mx.nd.load(tmp_path / "one")
    np.testing.assert_array_equal(one.asnumpy(), [1, 1])


def test_loading_never_unpickles(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, obj=np.array([{"code": "anything"}], dtype=object))
    with pytest.raises(ValueError, match="not a file written by kit.mx's mx.nd.save"):
        mx.nd.load(path)
    pickled = tmp_path / "evil.pkl"
    pickled.write_bytes(pickle.dumps([1, 2]))
    with pytest.raises(ValueError, match="MXNet's own binary format is not read"):
        mx.nd.load(pickled)


def test_foreign_npz_missing_files_and_bad_data(tmp_path):
    np.savez(tmp_path / "plain.npz", a=np.ones(2))
    with pytest.raises(ValueError, match="was not written by mx.nd.save.*numpy.load"):
        mx.nd.load(tmp_path / "plain.npz")
    with pytest.raises(FileNotFoundError):
        mx.nd.load(tmp_path / "missing")
    with pytest.raises(TypeError, match="entry '1' is a list"):
        mx.nd.save(tmp_path / "x", [mx.nd.ones(1), [1]])
    with pytest.raises(TypeError, match="dict keys must be strings"):
        mx.nd.save(tmp_path / "x", {1: mx.nd.ones(1)})
    with pytest.raises(TypeError, match="must be an NDArray, a list"):
        mx.nd.save(tmp_path / "x", np.ones(2))
