"""Every malformed return of a CustomOpProp method is refused at the mx.nd.Custom call with an
error that is an MXNetError, names the op and the Prop method, and says how to fix it."""

import numpy as np
import pytest
from test_mx_misuse import Square, register

import kit.mx as mx


def _custom(name, *inputs):
    return mx.nd.Custom(*(inputs or (mx.nd.array([1.0, 2.0, 3.0]),)), op_type=name)


def _method(value):
    return lambda self, *args: value


@pytest.mark.parametrize("method,value,kind,match", [
    ("list_arguments", "data", TypeError, r"returned the string 'data'.*return \['data'\]"),
    ("list_outputs", "output", TypeError, r"returned the string 'output'"),
    ("list_auxiliary_states", "state", TypeError, r"returned the string 'state'"),
    ("list_arguments", ["data", 3], TypeError, "must return a list of names"),
    ("list_arguments", None, TypeError, "must return a list of names"),
    ("list_outputs", ["out", "out"], ValueError, r"names \['out'\] appear more than once"),
    ("list_outputs", [], ValueError, "declares no outputs"),
])
def test_list_methods(method, value, kind, match):
    name = register(Square, **{method: _method(value)})
    with pytest.raises(kind, match=f"op_type='{name}'.*{method}.*{match}") as info:
        _custom(name)
    assert isinstance(info.value, mx.MXNetError)


@pytest.mark.parametrize("returned,match", [
    (([3], [[3]], []), r"argument 'data' is the number 3.*\[\[3\]\], not \[3\]"),
    (([[3]], [3], []), r"output 'output' is the number 3.*\[\[3\]\], not \[3\]"),
    (([[3]], [[3.5]], []), r"output 'output' is \[\[3.5\]\]|is \[3.5\].*non-negative ints"),
    (([[3]], [[-1]], []), r"is \[-1\].*non-negative ints"),
    (([[3]], [None], []), r"output 'output' is None"),
    (([[3]], 3, []), "returned output shapes must be a list"),
    (None, "must return 2 or 3 lists"),
    (([[3]],), "must return 2 or 3 lists"),
])
def test_infer_shape(returned, match):
    name = register(Square, infer_shape=_method(returned))
    with pytest.raises(ValueError, match=f"op_type='{name}'.*infer_shape.*({match})") as info:
        _custom(name)
    assert isinstance(info.value, mx.MXNetError)


def test_infer_shape_accepts_tuples_and_numpy_ints():
    name = register(Square, infer_shape=_method((((np.int64(3),),), [(3,)], ())))
    np.testing.assert_array_equal(_custom(name).asnumpy(), [1, 4, 9])


@pytest.mark.parametrize("returned,match", [
    (([np.float32], ["floatx"], []), r"output 'output' is 'floatx'.*not a numeric dtype"),
    (([np.float32], [None], []), r"output 'output' is None"),
    (([np.float32], [object], []), "not a numeric dtype"),
    (([None], [np.float32], []), r"argument 'data' is None"),
    (([np.float64], [np.float32], []), "returned dtype float64 for argument 'data'"),
])
def test_infer_type(returned, match):
    name = register(Square, infer_type=_method(returned))
    with pytest.raises(TypeError, match=f"op_type='{name}'.*infer_type.*{match}") as info:
        _custom(name)
    assert isinstance(info.value, mx.MXNetError)


def test_infer_type_returning_a_type_instead_of_a_list():
    name = register(Square, infer_type=_method(([np.float32], np.float32, [])))
    with pytest.raises(mx.MXNetError, match="infer_type.*returned output types must be a list"):
        _custom(name)


def test_infer_type_accepts_strings_and_dtypes():
    name = register(Square, infer_type=_method((["float32"], [np.dtype("float32")], [])))
    np.testing.assert_array_equal(_custom(name).asnumpy(), [1, 4, 9])


@pytest.mark.parametrize("returned,kind,match", [
    (5, TypeError, "must return a list of ids, got 5"),
    ([0, 7], ValueError, r"returned \[7\], which are not among the ids"),
    ([0, "1"], ValueError, r"returned \['1'\]"),
])
def test_declare_backward_dependency(returned, kind, match):
    name = register(Square, declare_backward_dependency=_method(returned))
    with pytest.raises(kind, match=f"op_type='{name}'.*declare_backward_dependency.*{match}"):
        _custom(name)


def test_aux_shapes_are_checked_like_the_others():
    class WithState(Square):
        pass

    name = register(WithState, list_auxiliary_states=_method(["state"]),
                    infer_shape=lambda self, s: (s, [s[0]], [2]))
    with pytest.raises(ValueError, match=r"aux state 'state' is the number 2"):
        mx.nd.Custom(mx.nd.array([1.0, 2.0]), mx.nd.zeros((2,)), op_type=name)
