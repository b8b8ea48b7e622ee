"""torch.save / torch.load on kit: tensors, dicts, state dicts (of models and optimisers),
shared tensors, and the weights_only refusal of pickled code (PyTorch 2.6+'s default)."""

import io
import pickle

import numpy as np
import pytest

import kit
import kit.torch as torch


def round_trip(obj, **load_kwargs):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kwargs)


def test_tensors_keep_dtype_shape_values_and_flags(tmp_path):
    path = tmp_path / "t.pt"
    obj = {
        "f32": torch.randn(2, 3), "f64": torch.tensor([1.5], dtype=torch.float64),
        "i64": torch.arange(4), "scalar": torch.tensor(3.0), "flag": torch.tensor([True]),
        "leaf": torch.ones(2, requires_grad=True), "list": [1, "a", (2.0, None)],
        "array": np.arange(3),
    }
    torch.save(obj, path)
    back = torch.load(path)
    assert back.keys() == obj.keys() and back["list"] == [1, "a", (2.0, None)]
    for key in ("f32", "f64", "i64", "scalar", "flag", "leaf"):
        assert back[key].dtype == obj[key].dtype and back[key].shape == obj[key].shape
        np.testing.assert_array_equal(back[key].detach().numpy(), obj[key].detach().numpy())
    assert back["leaf"].requires_grad and not back["f32"].requires_grad
    np.testing.assert_array_equal(back["array"], np.arange(3))
    assert isinstance(round_trip(torch.nn.Parameter(torch.ones(1))), torch.nn.Parameter)


def test_shared_tensors_stay_shared():
    t = torch.ones(3)
    back = round_trip({"a": t, "b": t})
    assert back["a"] is back["b"]


def test_model_and_optimizer_state_dicts_round_trip():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(5, 3)).sum().backward()
    opt.step()
    back = round_trip({"model": model.state_dict(), "opt": opt.state_dict()})
    fresh = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    fresh.load_state_dict(back["model"])
    for a, b in zip(model.state_dict().values(), fresh.state_dict().values(), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    fresh_opt = torch.optim.Adam(fresh.parameters(), lr=0.5)
    fresh_opt.load_state_dict(back["opt"])
    assert fresh_opt.param_groups[0]["lr"] == 0.01
    assert fresh_opt.state[fresh[0].weight]["step"].item() == 1


def test_weights_only_refuses_pickled_code_unless_told():
    model = torch.nn.Linear(2, 1)
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="weights_only=False"):
        torch.load(buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    assert isinstance(loaded, torch.nn.Linear)
    np.testing.assert_array_equal(loaded.weight.detach().numpy(), model.weight.detach().numpy())
    with pytest.raises(pickle.UnpicklingError, match="print"):
        round_trip({"f": print})


class Config:
    def __init__(self, depth):
        self.depth = depth


def test_add_safe_globals_allows_a_class():
    with pytest.raises(pickle.UnpicklingError, match="add_safe_globals"):
        round_trip(Config(3))
    torch.serialization.add_safe_globals([Config])
    assert round_trip(Config(3)).depth == 3


def test_map_location_and_foreign_files(tmp_path):
    assert round_trip(torch.ones(2), map_location="cpu").device == "cpu"
    bad = tmp_path / "x.zip"
    import zipfile

    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("other.txt", "hi")
    with pytest.raises(RuntimeError, match="not written by kit"):
        torch.load(bad)
    assert kit.serialization.load is torch.load
