"""MXNet APIs kit.mx leaves out exist and raise NotImplementedError naming what kit offers
instead (never AttributeError), so ported code fails at its first use with a way forward."""

import copy

import pytest

import kit.mx as mx


@pytest.mark.parametrize("use,names,instead", [
    (lambda: mx.sym.Variable("data"), "mx.sym.Variable", "mx.autograd.record"),
    (lambda: mx.symbol.FullyConnected, "mx.symbol.FullyConnected", "imperatively"),
    (lambda: mx.mod.Module(None), "mx.mod.Module", "y.backward()"),
    (lambda: mx.io.NDArrayIter, "mx.io.NDArrayIter", "for i in range"),
    (lambda: mx.kv.create("local"), "mx.kv.create", "key-value store"),
    (lambda: mx.nd.sparse.csr_matrix(([1], [0], [0, 1])), "csr_matrix", "dense NDArrays"),
    (lambda: mx.nd.sparse.row_sparse_array, "row_sparse_array.__call__|row_sparse_array",
     "dense"),
    (lambda: mx.nd.ones((2,)).tostype("csr"), "tostype\\('csr'\\)", "dense NDArrays"),
    (lambda: mx.nd.sparse.zeros("row_sparse", (2, 2)), "'row_sparse'", "dense"),
])
def test_out_of_scope_apis_say_what_to_use_instead(use, names, instead):
    with pytest.raises(NotImplementedError, match=f"({names}).*Instead: .*{instead}"):
        result = use()
        if isinstance(result, mx._out_of_scope.OutOfScope):
            result()


def test_out_of_scope_objects_stay_ordinary_python_objects():
    assert "not in kit.mx" in repr(mx.sym)
    assert copy.copy(mx.sym) is not None  # copy/pickle/inspect see plain dunder behaviour
    assert not hasattr(mx.sym, "__wrapped__")
