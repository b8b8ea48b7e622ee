"""Every misuse in REFERENCE.md's MXNet section: where MXNet crashes, hangs, prints a traceback
and fails later, or gives garbage, kit.mx raises a clear error at the call that caused it."""

import numpy as np
import pytest

import kit.mx as mx


class Square(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])


def prop_for(op_cls, **methods):
    """A Prop class whose create_operator returns op_cls(); `methods` override the rest."""

    def create_operator(self, ctx, shapes, dtypes):
        return op_cls()

    def init(self):
        mx.operator.CustomOpProp.__init__(self, need_top_grad=methods.pop("need_top_grad", True))

    body = {"__init__": init, "create_operator": create_operator}
    body.update(methods)
    return type(f"{op_cls.__name__}Prop", (mx.operator.CustomOpProp,), body)


_count = [0]


def register(op_cls, **methods):
    """Register a fresh op under a new name; returns that name."""
    _count[0] += 1
    name = f"misuse_{_count[0]}"
    mx.operator.register(name)(prop_for(op_cls, **methods))
    return name


def variable(values):
    x = mx.nd.array(values)
    x.attach_grad()
    return x


SQUARE = register(Square)


# --- calling --------------------------------------------------------------------------------
def test_input_passed_as_keyword():
    with pytest.raises(mx.MXNetError, match="expects 1 inputs, but got 0 instead") as info:
        mx.nd.Custom(data=mx.nd.array([1]), op_type=SQUARE)
    assert "positional" in str(info.value)


def test_wrong_number_of_inputs():
    with pytest.raises(mx.MXNetError, match="expects 1 inputs, but got 2 instead"):
        mx.nd.Custom(mx.nd.array([1]), mx.nd.array([2]), op_type=SQUARE)


def test_unknown_op_type():
    with pytest.raises(mx.MXNetError, match="Cannot find custom operator nope"):
        mx.nd.Custom(mx.nd.array([1]), op_type="nope")


def test_missing_op_type_and_non_array_input():
    with pytest.raises(TypeError, match="op_type"):
        mx.nd.Custom(mx.nd.array([1]))
    with pytest.raises(TypeError, match="input 0 is a list"):
        mx.nd.Custom([1.0], op_type=SQUARE)


# --- registering --------------------------------------------------------------------------
def test_registering_an_instance_or_a_non_prop_class():
    prop_cls = prop_for(Square)
    with pytest.raises(TypeError, match="not a class"):
        mx.operator.register("misuse_instance")(prop_cls())
    with pytest.raises(TypeError, match="not a subclass of mx.operator.CustomOpProp"):
        mx.operator.register("misuse_not_prop")(Square)
    with pytest.raises(TypeError, match="non-empty string"):
        mx.operator.register(prop_cls)


def test_re_registering_replaces_with_a_warning():
    name = register(Square)

    class Cube(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] ** 3)

    with pytest.warns(UserWarning, match=f"'{name}' was registered before"):
        mx.operator.register(name)(prop_for(Cube))
    assert mx.nd.Custom(mx.nd.array([2]), op_type=name).asscalar() == 8


def test_prop_init_that_cannot_take_the_kwargs():
    name = register(Square)
    with pytest.raises(TypeError, match=f"op_type='{name}'.*cannot be called with") as info:
        mx.nd.Custom(mx.nd.array([1]), op_type=name, scale=2.5)
    assert "'scale': '2.5'" in str(info.value) and "float(scale)" in str(info.value)


def test_prop_init_missing_a_keyword():
    class NeedsScale(mx.operator.CustomOpProp):
        def __init__(self, scale):
            super().__init__()
            self.scale = float(scale)

        def create_operator(self, ctx, shapes, dtypes):
            return Square()

    mx.operator.register("misuse_needs_scale")(NeedsScale)
    with pytest.raises(TypeError, match=r"missing a required argument: 'scale'.*scale=\.\.\."):
        mx.nd.Custom(mx.nd.array([1]), op_type="misuse_needs_scale")


def test_prop_init_without_super():
    class NoSuper(mx.operator.CustomOpProp):
        def __init__(self):
            pass

        def create_operator(self, ctx, shapes, dtypes):
            return Square()

    mx.operator.register("misuse_nosuper")(NoSuper)
    with pytest.raises(TypeError, match=r"super\(\).__init__"):
        mx.nd.Custom(mx.nd.array([1]), op_type="misuse_nosuper")


def test_create_operator_returning_the_class():
    name = register(Square, create_operator=lambda self, ctx, shapes, dtypes: Square)
    with pytest.raises(TypeError, match="an instance, not the class"):
        mx.nd.Custom(mx.nd.array([1]), op_type=name)


# --- errors in the user's code keep their type and gain op_type and phase ---------------------
def _raiser(exc):
    def method(self, *args, **kwargs):
        raise exc

    return method


@pytest.mark.parametrize("phase,exc_type", [
    ("infer_shape", ValueError), ("infer_type", KeyError), ("create_operator", ZeroDivisionError),
    ("list_arguments", AttributeError), ("declare_backward_dependency", IndexError),
])
def test_errors_in_prop_methods_surface_at_the_call(phase, exc_type):
    name = register(Square, **{phase: _raiser(exc_type("boom"))})
    with pytest.raises(exc_type, match=f"op_type='{name}'.*{phase}.*boom") as info:
        mx.nd.Custom(mx.nd.array([1]), op_type=name)
    assert isinstance(info.value.__cause__, exc_type)  # the original, chained


def test_error_in_forward_surfaces_at_the_custom_call():
    class Bad(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            return 1 / 0

    name = register(Bad)
    with pytest.raises(ZeroDivisionError, match=f"op_type='{name}'.*forward"):
        mx.nd.Custom(mx.nd.array([1]), op_type=name)


def test_error_in_backward_surfaces_at_the_backward_call():
    class Bad(Square):
        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            raise ValueError("my backward is wrong")

    name = register(Bad)
    x = variable([1.0])
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type=name)
    with pytest.raises(ValueError, match=f"op_type='{name}'.*backward.*my backward is wrong"):
        y.backward()


def test_exception_types_with_other_constructors_keep_their_type():
    class WeirdError(Exception):
        def __init__(self, code, detail):
            super().__init__(code, detail)

    class Bad(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise WeirdError(3, "odd")

    name = register(Bad)
    with pytest.raises(WeirdError) as info:
        mx.nd.Custom(mx.nd.array([1]), op_type=name)
    assert any(name in note for note in info.value.__notes__)


# --- garbage MXNet lets through --------------------------------------------------------------
def test_output_never_written():
    class Lazy(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            out_data[0] = in_data[0] * 2  # rebinding the list item writes nothing

    name = register(Lazy)
    with pytest.raises(RuntimeError, match=r"out_data\[0\] \('output'\) was never written"):
        mx.nd.Custom(mx.nd.array([1]), op_type=name)
    with pytest.raises(RuntimeError, match="never written"):
        mx.nd.Custom(mx.nd.array([1]), op_type=register(mx.operator.CustomOp))


@pytest.mark.parametrize("write", [
    lambda in_data: in_data[0].__setitem__(slice(None), 0),
    lambda in_data: in_data[0].__iadd__(1),
    lambda in_data: mx.operator.CustomOp().assign(in_data[0], "write", 5),
    lambda in_data: in_data[0][0:1].__iadd__(1),
])
def test_write_into_in_data(write):
    class Writer(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            write(in_data)

    name = register(Writer)
    x = mx.nd.array([1, 2])
    with pytest.raises(ValueError, match=r"in_data\[0\] \('data'\) is read-only"):
        mx.nd.Custom(x, op_type=name)
    assert x.asnumpy().tolist() == [1, 2]  # the caller's array is untouched


def test_forward_result_shape_disagrees_with_infer_shape():
    class SumOp(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0].sum())  # shape (1,)

    name = register(SumOp)  # default infer_shape: the output has the input's shape (3,)
    with pytest.raises(ValueError, match=r"has shape \(3,\) \(from infer_shape\).*\(1,\)"):
        mx.nd.Custom(mx.nd.array([1, 2, 3]), op_type=name)


def test_infer_shape_that_changes_an_input_shape_or_miscounts():
    name = register(Square, infer_shape=lambda self, s: ([[9]], [[9]], []))
    with pytest.raises(ValueError, match=r"returned shape \(9,\) for argument 'data'"):
        mx.nd.Custom(mx.nd.array([1, 2]), op_type=name)
    name = register(Square, infer_shape=lambda self, s: (s, [], []))
    with pytest.raises(ValueError, match="expecting 1 entries in returned output shapes, got 0"):
        mx.nd.Custom(mx.nd.array([1, 2]), op_type=name)
    name = register(Square, infer_shape=lambda self, s: s)
    with pytest.raises(ValueError, match="must return 2 or 3 lists"):
        mx.nd.Custom(mx.nd.array([1, 2]), op_type=name)


def test_missing_backward():
    class ForwardOnly(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 2)

    name = register(ForwardOnly)
    x = variable([1.0, 2.0])
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type=name)
    with pytest.raises(RuntimeError, match=r"in_grad\[0\] \('data'\) was never written"):
        y.backward()


def test_reading_what_declare_backward_dependency_left_out():
    class UsesOutput(Square):
        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], 2 * out_data[0].sqrt() * out_grad[0])

    name = register(UsesOutput,
                    declare_backward_dependency=lambda self, og, ind, outd: og + ind)
    x = variable([4.0])
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type=name)
    with pytest.raises(mx.MXNetError, match=r"read out_data\[0\].*returned \[0, 1\]"):
        y.backward()


def test_loss_layer_reading_out_grad():
    name = register(Square, need_top_grad=False)
    x = variable([1.0])
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type=name)
    with pytest.raises(mx.MXNetError, match="need_top_grad=False"):
        y.backward()


def test_input_modified_in_place_before_backward():
    x = variable([1.0, 2.0])
    with mx.autograd.record():
        h = x * 1
        y = mx.nd.Custom(h, op_type=SQUARE)
    with mx.autograd.pause():
        h[:] = 5  # MXNet would compute the gradient from the changed values
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_assign_with_an_unknown_req():
    with pytest.raises(ValueError, match="unknown req 'overwrite'"):
        mx.operator.CustomOp().assign(mx.nd.zeros((1,)), "overwrite", 1)


# --- autograd misuse -----------------------------------------------------------------------
def test_backward_outside_record_and_twice():
    x = variable([1.0])
    y = mx.nd.Custom(x, op_type=SQUARE)
    with pytest.raises(mx.MXNetError, match="use autograd.record()"):
        y.backward()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type=SQUARE)
    y.backward()
    with pytest.raises(mx.MXNetError, match="retain_graph=True"):
        y.backward()


def test_higher_order_through_a_numpy_backward():
    class NumpyBackward(Square):
        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            dx = 2 * in_data[0].asnumpy() * out_grad[0].asnumpy()
            self.assign(in_grad[0], req[0], mx.nd.array(dx))

    name = register(NumpyBackward)
    x = variable([1.0, 2.0])
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type=name)
        (dx,) = mx.autograd.grad(y, [x], create_graph=True)
    np.testing.assert_allclose(dx.asnumpy(), [2, 4])  # first order is right
    with pytest.raises(RuntimeError, match="cannot be differentiated again"):
        dx.backward()


def test_mx_gpu_without_a_gpu():
    if mx.context.num_gpus():
        pytest.skip("a GPU is usable here")
    with pytest.raises(mx.MXNetError, match="no usable GPU"):
        mx.gpu(0)
