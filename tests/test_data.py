"""torch.utils.data on kit: TensorDataset, DataLoader batching, shuffling with a Generator,
drop_last and default_collate (the collate rules checked against PyTorch's where installed)."""

import numpy as np
import pytest

import kit
import kit.torch as ktorch
from kit.torch.utils.data import (
    DataLoader,
    Dataset,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)

try:
    import torch
except ImportError:  # pragma: no cover - PyTorch is the optional oracle
    torch = None


def dataset(n=10):
    return TensorDataset(kit.arange(n * 2.0).reshape(n, 2), kit.arange(n))


def test_tensor_dataset():
    ds = dataset()
    assert len(ds) == 10
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and y.item() == 3
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(kit.zeros(3), kit.zeros(4))
    with pytest.raises(TypeError, match="kit.tensor"):
        TensorDataset([1, 2, 3])


def test_batches_in_order_with_last_partial_batch():
    loader = DataLoader(dataset(), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[1].tolist() for b in batches] == [
        [0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == (4, 2)
    dropped = DataLoader(dataset(), batch_size=4, drop_last=True)
    assert len(dropped) == 2 and [b[1].shape[0] for b in dropped] == [4, 4]


def test_workers_and_pinned_memory_give_the_same_batches():
    plain = [y.tolist() for _, y in DataLoader(dataset(), batch_size=4)]
    workers = DataLoader(dataset(), batch_size=4, num_workers=4, pin_memory=True)
    assert [y.tolist() for _, y in workers] == plain


def test_shuffle_with_generator_is_reproducible_and_a_permutation():
    def order(seed, epochs=2):
        g = ktorch.Generator().manual_seed(seed)
        loader = DataLoader(dataset(), batch_size=3, shuffle=True, generator=g)
        return [[i for _, y in loader for i in y.tolist()] for _ in range(epochs)]

    first, second = order(0)
    assert sorted(first) == list(range(10)) and sorted(second) == list(range(10))
    assert first != second  # each epoch reshuffles
    assert order(0) == [first, second]  # the same seed, the same orders
    assert order(1)[0] != first
    kit.manual_seed(3)
    a = [y.item() for _, y in DataLoader(dataset(), shuffle=True)]
    kit.manual_seed(3)
    assert a == [y.item() for _, y in DataLoader(dataset(), shuffle=True)]


class Squares(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": float(i), "y": i * i, "name": f"s{i}", "v": np.full(2, i, np.float32)}


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed (the oracle)")
def test_default_collate_matches_pytorch():
    import torch.utils.data

    samples = [Squares()[i] for i in range(3)]
    ours = default_collate(samples)
    ref = torch.utils.data.default_collate(samples)
    assert ours.keys() == ref.keys() and ours["name"] == ref["name"]
    for key in ("x", "y", "v"):
        assert str(ours[key].dtype) == str(ref[key].dtype).replace("torch.", "")
        np.testing.assert_array_equal(ours[key].numpy(), ref[key].numpy())
    pairs = [(kit.ones(2), 1), (kit.zeros(2), 2)]
    ref_pairs = [(torch.ones(2), 1), (torch.zeros(2), 2)]
    ours, ref = default_collate(pairs), torch.utils.data.default_collate(ref_pairs)
    assert type(ours) is type(ref) is list and ours[0].shape == tuple(ref[0].shape)


def test_custom_dataset_custom_collate_and_unbatched():
    loader = DataLoader(Squares(), batch_size=2, collate_fn=lambda b: [s["y"] for s in b])
    assert list(loader) == [[0, 1], [4, 9], [16]]
    assert [s["y"] for s in DataLoader(Squares(), batch_size=None)] == [0, 1, 4, 9, 16]
    assert [b["y"].tolist() for b in DataLoader(Subset(Squares(), [4, 0]), batch_size=2)] == [
        [16, 0]]
    with pytest.raises(NotImplementedError, match="__getitem__"):
        Dataset()[0]


def test_bad_arguments():
    with pytest.raises(ValueError, match="non-negative"):
        DataLoader(dataset(), num_workers=-1)
    with pytest.raises(ValueError, match="positive integer"):
        DataLoader(dataset(), batch_size=0)
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(dataset(), sampler=[0, 1], shuffle=True)
    with pytest.raises(TypeError, match="collate_fn"):
        default_collate([object()])


def test_random_split_lengths_fractions_and_seed():
    ds = dataset(10)
    parts = random_split(ds, [7, 3], generator=ktorch.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [7, 3]
    seen = sorted(int(y) for p in parts for _, y in (p[i] for i in range(len(p))))
    assert seen == list(range(10))
    again = random_split(ds, [7, 3], generator=ktorch.Generator().manual_seed(0))
    assert again[1].indices == parts[1].indices
    assert [len(p) for p in random_split(ds, [0.5, 0.3, 0.2])] == [5, 3, 2]
    assert [len(p) for p in random_split(dataset(7), [0.5, 0.5])] == [4, 3]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [5, 4])


def test_concat_dataset():
    both = dataset(3) + dataset(2)
    assert len(both) == 5 and both[3][1].item() == 0 and both[-1][1].item() == 1
    with pytest.raises(IndexError):
        both[5]
