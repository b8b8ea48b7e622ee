"""mx.base.MXNetError: where MXNet raises MXNetError (inside a CustomOp, shape errors of nd ops)
kit.mx raises an error that is an MXNetError and keeps the original type, message and the
user's line in the traceback (the usage of MXNet's test_custom_op_exc)."""

import pickle
import traceback

import pytest

import kit.mx as mx
from kit.mx.base import MXNetError, mxnet_error_type


def _build_dot(name, forward):
    """A two-input op whose output has shape (rows of a, columns of b); forward is given."""

    class Dot(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            forward(in_data, out_data)

    @mx.operator.register(name)
    class DotProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=True)

        def list_arguments(self):
            return ["a", "b"]

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0][:1] + in_shape[1][1:]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Dot()

    return name


def test_assert_inside_forward_is_an_mxnet_error_and_an_assertion_error():
    def forward(in_data, out_data):
        assert False, "user's check"  # noqa: B011 - the failure under test

    name = _build_dot("exc_assert", forward)
    with pytest.raises(MXNetError) as info:
        mx.nd.Custom(mx.nd.zeros((4, 1)), mx.nd.zeros((1, 4)), op_type=name).wait_to_read()
    assert isinstance(info.value, AssertionError)
    assert "user's check" in str(info.value) and "exc_assert" in str(info.value)
    assert "forward" in str(info.value)
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert last.filename == __file__ and "user's check" in last.line


def test_shape_error_of_an_nd_op_inside_forward():
    def forward(in_data, out_data):
        out_data[0][:] = mx.nd.dot(in_data[0], in_data[1])

    name = _build_dot("exc_shape", forward)
    # (4, 2) . (1, 4): infer_shape accepts it, the dot inside forward cannot
    with pytest.raises(MXNetError, match="exc_shape.*forward"):
        mx.nd.Custom(mx.nd.zeros((4, 2)), mx.nd.zeros((1, 4)), op_type=name).wait_to_read()
    with pytest.raises(ValueError):  # the original type still catches it
        mx.nd.Custom(mx.nd.zeros((4, 2)), mx.nd.zeros((1, 4)), op_type=name)


def test_not_positive_definite_in_potrf_inside_forward():
    def forward(in_data, out_data):
        out_data[0][:] = mx.nd.linalg.potrf(mx.nd.dot(in_data[0], in_data[1]))

    name = _build_dot("exc_potrf", forward)
    x = mx.nd.array([[1, 2], [3, 4]])
    with pytest.raises(MXNetError, match="exc_potrf.*forward.*not symmetric positive definite"):
        mx.nd.Custom(x, x, op_type=name).wait_to_read()


def test_error_in_backward_is_an_mxnet_error():
    class Square(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            raise KeyError("no gradient here")

    @mx.operator.register("exc_backward")
    class SquareProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Square()

    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="exc_backward")
    with pytest.raises(MXNetError, match="exc_backward.*backward.*no gradient here") as info:
        y.backward()
    assert isinstance(info.value, KeyError)
    assert isinstance(info.value.__cause__, KeyError)  # the original, chained
    assert "raise KeyError" in traceback.extract_tb(info.value.__traceback__)[-1].line


@pytest.mark.parametrize("call", [
    lambda: mx.nd.elemwise_add(mx.nd.ones((2, 3)), mx.nd.ones((3, 2))),
    lambda: mx.nd.ones((2, 3)) + mx.nd.ones((4,)),
    lambda: mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((2, 3))),
    lambda: mx.nd.ones((2, 3)).copyto(mx.nd.zeros((3,))),
    lambda: mx.nd.ones((2, 3)).reshape((4, 2)),
])
def test_shape_errors_of_nd_ops_are_mxnet_errors_and_value_errors(call):
    with pytest.raises(MXNetError) as info:
        call()
    assert isinstance(info.value, ValueError)


def test_mixed_types_are_made_once_per_type_and_keep_the_name():
    assert mxnet_error_type(ValueError) is mxnet_error_type(ValueError)
    assert mxnet_error_type(ValueError).__name__ == "ValueError"
    assert issubclass(mxnet_error_type(KeyError), LookupError)
    assert mxnet_error_type(MXNetError) is MXNetError
    runtime = mxnet_error_type(RuntimeError)  # a base of MXNetError: still named RuntimeError
    assert runtime.__name__ == "RuntimeError" and issubclass(runtime, MXNetError)
    assert mx.base.MXNetError is mx.MXNetError


def test_user_exception_with_several_arguments_keeps_them_and_its_attributes():
    class CodedError(Exception):
        def __init__(self, code, detail):
            super().__init__(code, detail)
            self.code = code

    def forward(in_data, out_data):
        raise CodedError(7, "odd")

    name = _build_dot("exc_coded", forward)
    with pytest.raises(CodedError) as info:
        mx.nd.Custom(mx.nd.zeros((1, 1)), mx.nd.zeros((1, 1)), op_type=name)
    assert isinstance(info.value, MXNetError)
    assert info.value.args == (7, "odd") and info.value.code == 7
    assert any("exc_coded" in note for note in info.value.__notes__)


def test_mixed_errors_pickle_round_trip_as_the_same_mixed_type():
    name = _build_dot("exc_pickle", lambda in_data, out_data: [][1])
    with pytest.raises(IndexError) as info:
        mx.nd.Custom(mx.nd.zeros((1, 1)), mx.nd.zeros((1, 1)), op_type=name)
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is type(info.value) and isinstance(again, MXNetError)
    assert str(again) == str(info.value)
