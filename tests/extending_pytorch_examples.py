"""The custom-Function examples of PyTorch's docs, written once and run on either library.

Each example takes the `torch` module to run on (real PyTorch or `kit.torch`) and returns a dict of
plain results (`plain()` turns tensors into dtype + nested lists). The class bodies are the docs'
code: the "Extending PyTorch" note (LinearFunction in both forms, MulConstant, the
set_materialize_grads variant, MyCube, gradcheck), the FunctionCtx docstrings (save_for_backward,
mark_dirty, mark_non_differentiable, set_materialize_grads), the Function docstring (Exp) and the
"Double Backward with Custom Functions" tutorial (Square, Exp, Sinh, SinhBad, Cube). Only the input
data is written literally instead of drawn at random, so both libraries see the same numbers, and
`from torch.autograd import Function` is spelt `Function = torch.autograd.Function` so that the
name `torch` can be either library.
"""

from __future__ import annotations

X23 = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
W43 = [[0.1, 0.2, -0.3], [0.4, -0.5, 0.6], [-0.7, 0.8, 0.9], [1.0, -1.1, 1.2]]
B4 = [0.05, -0.15, 0.25, -0.35]
G24 = [[1.0, -2.0, 0.5, 3.0], [0.25, 1.5, -1.0, 2.0]]


def plain(value):
    """Tensors as {"dtype", "value"}; tuples, lists and dicts recursively; the rest as is."""
    if hasattr(value, "detach"):
        return {"dtype": str(value.dtype).replace("torch.", ""),
                "value": value.detach().tolist()}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def _leaves(torch):
    x = torch.tensor(X23, dtype=torch.float64, requires_grad=True)
    w = torch.tensor(W43, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(B4, dtype=torch.float64, requires_grad=True)
    return x, w, b


def _grads(torch, out, *leaves):
    (out * torch.tensor(G24, dtype=torch.float64)).sum().backward()
    return [t.grad for t in leaves]


def linear_separate(torch):
    Function, gradcheck = torch.autograd.Function, torch.autograd.gradcheck

    # Inherit from Function
    class LinearFunction(Function):

        # Note that forward, setup_context, and backward are @staticmethods
        @staticmethod
        def forward(input, weight, bias):
            output = input.mm(weight.t())
            if bias is not None:
                output += bias.unsqueeze(0).expand_as(output)
            return output

        @staticmethod
        # inputs is a Tuple of all of the inputs passed to forward.
        # output is the output of the forward().
        def setup_context(ctx, inputs, output):
            input, weight, bias = inputs
            ctx.save_for_backward(input, weight, bias)

        # This function has only a single output, so it gets only one gradient
        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_input = grad_output.mm(weight)
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.t().mm(input)
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)
            return grad_input, grad_weight, grad_bias

    # Option 1: alias
    linear = LinearFunction.apply

    # Option 2: wrap in a function, to support default args and keyword args.
    def linear_wrapped(input, weight, bias=None):
        return LinearFunction.apply(input, weight, bias)

    x, w, b = _leaves(torch)
    out = linear(x, w, b)
    with_bias = [out, *_grads(torch, out, x, w, b)]
    x, w, _ = _leaves(torch)
    out = linear_wrapped(x, w)
    without_bias = [out, *_grads(torch, out, x, w)]
    # The note's gradcheck, with its random inputs (any values pass). As printed in the note it
    # calls the alias with two inputs, which the separate-form forward (bias has no default)
    # refuses in PyTorch and kit alike: the wrapper with `bias=None` is what works.
    input = (torch.randn(20, 20, dtype=torch.double, requires_grad=True),
             torch.randn(30, 20, dtype=torch.double, requires_grad=True))
    try:
        gradcheck(linear, input, eps=1e-6, atol=1e-4)
        verbatim = "passed"
    except TypeError as exc:
        verbatim = "missing a required argument: 'bias'" in str(exc)
    test = gradcheck(linear_wrapped, input, eps=1e-6, atol=1e-4)
    return {"with_bias": with_bias, "without_bias": without_bias, "gradcheck": test,
            "verbatim_gradcheck_fails": verbatim}


def linear_combined(torch):
    Function = torch.autograd.Function

    class LinearFunction(Function):
        @staticmethod
        # ctx is the first argument to forward
        def forward(ctx, input, weight, bias=None):
            # The forward pass can use ctx.
            ctx.save_for_backward(input, weight, bias)
            output = input.mm(weight.t())
            if bias is not None:
                output += bias.unsqueeze(0).expand_as(output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None

            if ctx.needs_input_grad[0]:
                grad_input = grad_output.mm(weight)
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.t().mm(input)
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)

            return grad_input, grad_weight, grad_bias

    x, w, b = _leaves(torch)
    out = LinearFunction.apply(x, w, b)
    with_bias = [out, *_grads(torch, out, x, w, b)]
    x, w, _ = _leaves(torch)
    w.requires_grad_(False)
    out = LinearFunction.apply(x, w)
    return {"with_bias": with_bias, "no_bias_no_weight_grad": [out, *_grads(torch, out, x, w)]}


def mul_constant(torch):
    Function = torch.autograd.Function

    class MulConstantCombined(Function):
        @staticmethod
        def forward(ctx, tensor, constant):
            # ctx is a context object that can be used to stash information
            # for backward computation
            ctx.constant = constant
            return tensor * constant

        @staticmethod
        def backward(ctx, grad_output):
            # We return as many input gradients as there were arguments.
            # Gradients of non-Tensor arguments to forward must be None.
            return grad_output * ctx.constant, None

    class MulConstant(Function):
        @staticmethod
        def forward(tensor, constant):
            return tensor * constant

        @staticmethod
        def setup_context(ctx, inputs, output):
            # ctx is a context object that can be used to stash information
            # for backward computation
            tensor, constant = inputs
            ctx.constant = constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

    class MulConstantLazy(Function):
        @staticmethod
        def forward(tensor, constant):
            return tensor * constant

        @staticmethod
        def setup_context(ctx, inputs, output):
            tensor, constant = inputs
            ctx.set_materialize_grads(False)
            ctx.constant = constant

        @staticmethod
        def backward(ctx, grad_output):
            # Here we must handle None grad_output tensor. In this case we
            # can skip unnecessary computations and just return None.
            if grad_output is None:
                return None, None
            return grad_output * ctx.constant, None

    results = {}
    for fn in (MulConstantCombined, MulConstant, MulConstantLazy):
        x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = fn.apply(x, 2.5)
        y.sum().backward()
        results[fn.__name__] = [y, x.grad]
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    results["keyword_constant"] = MulConstant.apply(x, constant=4.0)
    return results


def my_cube(torch):
    class MyCube(torch.autograd.Function):
        @staticmethod
        def forward(x):
            # We wish to save dx for backward. In order to do so, it must
            # be returned as an output.
            dx = 3 * x ** 2
            result = x ** 3
            return result, dx

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, = inputs
            result, dx = output
            ctx.save_for_backward(x, dx)

        @staticmethod
        def backward(ctx, grad_output, grad_dx):
            x, dx = ctx.saved_tensors
            # In order for the autograd.Function to work with higher-order
            # gradients, we must add the gradient contribution of `dx`,
            # which is grad_dx * 6 * x.
            result = grad_output * dx + grad_dx * 6 * x
            return result

    class MyCubeCombined(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            dx = 3 * x ** 2
            result = x ** 3
            ctx.save_for_backward(x, dx)
            return result, dx

        @staticmethod
        def backward(ctx, grad_output, grad_dx):
            x, dx = ctx.saved_tensors
            return grad_output * dx + grad_dx * 6 * x

    results = {}
    for fn in (MyCube, MyCubeCombined):
        # Wrap MyCube in a function so that it is clearer what the output is
        def my_cube(x, fn=fn):
            result, dx = fn.apply(x)
            return result

        x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
        y = my_cube(x)
        (dy,) = torch.autograd.grad(y.sum(), x, create_graph=True)
        (d2y,) = torch.autograd.grad(dy.sum(), x)
        checks = [torch.autograd.gradcheck(my_cube, (x,)),
                  torch.autograd.gradgradcheck(my_cube, (x,))]
        results[fn.__name__] = [y, dy, d2y, checks]
    return results


def ctx_docstrings(torch):
    Function = torch.autograd.Function
    once_differentiable = torch.autograd.function.once_differentiable

    class Func(Function):  # FunctionCtx.save_for_backward's example
        @staticmethod
        def forward(ctx, x, y, z):
            w = x * z
            out = x * y + y * z + w * y
            ctx.save_for_backward(x, y, w, out)
            ctx.z = z  # z is not a tensor
            return out

        @staticmethod
        @once_differentiable
        def backward(ctx, grad_out):
            x, y, w, out = ctx.saved_tensors
            z = ctx.z
            gx = grad_out * (y + y * z)
            gy = grad_out * (x + z + w)
            gz = None
            return gx, gy, gz

    a = torch.tensor(1., requires_grad=True, dtype=torch.double)
    b = torch.tensor(2., requires_grad=True, dtype=torch.double)
    c = 4
    d = Func.apply(a, b, c)
    d.backward()
    saved = [d, a.grad, b.grad]

    class Sorted(Function):  # FunctionCtx.mark_non_differentiable's example
        @staticmethod
        def forward(ctx, x):
            sorted, idx = x.sort()
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(x, idx)
            return sorted, idx

        @staticmethod
        @once_differentiable
        def backward(ctx, g1, g2):  # still need to accept g2
            x, idx = ctx.saved_tensors
            grad_input = torch.zeros_like(x)
            grad_input.index_add_(0, idx, g1)
            return grad_input

    x = torch.tensor([3.0, -1.0, 2.0, 0.5], requires_grad=True)
    values, idx = Sorted.apply(x)
    (values * torch.tensor([1.0, 10.0, 100.0, 1000.0])).sum().backward()
    non_diff = [values, idx, idx.requires_grad, values.requires_grad, x.grad]

    class SimpleFunc(Function):  # FunctionCtx.set_materialize_grads's example
        @staticmethod
        def forward(ctx, x):
            return x.clone(), x.clone()

        @staticmethod
        @once_differentiable
        def backward(ctx, g1, g2):
            return g1 + g2  # No check for None necessary

    # We modify SimpleFunc to handle non-materialized grad outputs
    class Func2(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x.clone(), x.clone()

        @staticmethod
        @once_differentiable
        def backward(ctx, g1, g2):
            x, = ctx.saved_tensors
            grad_input = torch.zeros_like(x)
            if g1 is not None:  # We must check for None now
                grad_input += g1
            if g2 is not None:
                grad_input += g2
            return grad_input

    materialize = []
    for fn in (SimpleFunc, Func2):
        a = torch.tensor(1., requires_grad=True)
        b, _ = fn.apply(a)  # induces g2 to be undefined
        b.backward()
        materialize.append(a.grad)
    return {"save_for_backward": saved, "mark_non_differentiable": non_diff,
            "set_materialize_grads": materialize}


def mark_dirty(torch):
    Function = torch.autograd.Function
    once_differentiable = torch.autograd.function.once_differentiable

    class Inplace(Function):
        @staticmethod
        def forward(ctx, x):
            x_npy = x.numpy()  # x_npy shares storage with x
            x_npy += 1
            ctx.mark_dirty(x)
            return x

        @staticmethod
        @once_differentiable
        def backward(ctx, grad_output):
            return grad_output

    a = torch.tensor(1., requires_grad=True, dtype=torch.double).clone()
    b = a * a
    returned = Inplace.apply(a)  # This would lead to wrong gradients!
    # but the engine would not know unless we mark_dirty
    try:
        b.backward()  # RuntimeError: one of the variables needed for gradient
        error = None  # computation has been modified by an inplace operation
    except RuntimeError as exc:
        error = "modified by an inplace operation" in str(exc)
    c = torch.tensor(2., requires_grad=True, dtype=torch.double).clone()
    (Inplace.apply(c) * 3).backward()
    return {"same_object": returned is a, "value": a, "error": error,
            "a_grad_fn": a.grad_fn.name(), "through_dirty": [c]}


def exp_docstring(torch):
    Function = torch.autograd.Function

    class Exp(Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            result, = ctx.saved_tensors
            return grad_output * result

    input = torch.tensor([0.0, 1.0, -2.0], requires_grad=True)
    # Use it by calling the apply method:
    output = Exp.apply(input)
    output.sum().backward()
    return {"output": output, "grad": input.grad}


def double_backward_tutorial(torch):
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            # Because we are saving one of the inputs use `save_for_backward`
            # Save non-tensors and non-inputs/non-outputs directly on ctx
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        def backward(ctx, grad_out):
            # A function support double backward automatically if autograd
            # is able to record the computations performed in backward
            x, = ctx.saved_tensors
            return grad_out * 2 * x

    # Use double precision because finite differencing method magnifies errors
    x = torch.rand(3, 3, requires_grad=True, dtype=torch.double)
    square = [torch.autograd.gradcheck(Square.apply, x),
              # Use gradcheck to verify second-order derivatives
              torch.autograd.gradgradcheck(Square.apply, x)]
    x = torch.tensor(1., requires_grad=True).clone()
    out = Square.apply(x)
    grad_x, = torch.autograd.grad(out, x, create_graph=True)
    square.append([grad_x, grad_x.grad_fn is not None])

    class Exp(torch.autograd.Function):
        # Simple case where everything goes well
        @staticmethod
        def forward(ctx, x):
            # This time we save the output
            result = torch.exp(x)
            # Note that we should use `save_for_backward` here when
            # the tensor saved is an ouptut (or an input).
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_out):
            result, = ctx.saved_tensors
            return result * grad_out

    x = torch.tensor(1., requires_grad=True, dtype=torch.double).clone()
    # Validate our gradients using gradcheck
    exp = [torch.autograd.gradcheck(Exp.apply, x), torch.autograd.gradgradcheck(Exp.apply, x)]
    out = Exp.apply(x)
    grad_x, = torch.autograd.grad(out, x, create_graph=True)
    exp.append([grad_x, torch.autograd.grad(grad_x, x)[0]])

    class Sinh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            expx = torch.exp(x)
            expnegx = torch.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            # In order to be able to save the intermediate results, a trick is to
            # include them as our outputs, so that the backward graph is constructed
            return (expx - expnegx) / 2, expx, expnegx

        @staticmethod
        def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
            expx, expnegx = ctx.saved_tensors
            grad_input = grad_out * (expx + expnegx) / 2
            # We cannot skip accumulating these even though we won't use the outputs
            # directly. They will be used later in the second backward.
            grad_input += _grad_out_exp * expx
            grad_input -= _grad_out_negexp * expnegx
            return grad_input

    def sinh(x):
        # Create a wrapper that only returns the first output
        return Sinh.apply(x)[0]

    x = torch.rand(3, 3, requires_grad=True, dtype=torch.double)
    sinh_checks = [torch.autograd.gradcheck(sinh, x), torch.autograd.gradgradcheck(sinh, x)]

    class SinhBad(torch.autograd.Function):
        # This is an example of what NOT to do!
        @staticmethod
        def forward(ctx, x):
            expx = torch.exp(x)
            expnegx = torch.exp(-x)
            ctx.expx = expx
            ctx.expnegx = expnegx
            return (expx - expnegx) / 2

        @staticmethod
        def backward(ctx, grad_out):
            expx = ctx.expx
            expnegx = ctx.expnegx
            grad_input = grad_out * (expx + expnegx) / 2
            return grad_input

    out = SinhBad.apply(x)
    grad_x, = torch.autograd.grad(out.sum(), x, create_graph=True)
    sinh_bad = [grad_x.requires_grad,
                torch.autograd.gradgradcheck(SinhBad.apply, x, raise_exception=False)]

    def cube_forward(x):
        return x**3

    def cube_backward(grad_out, x):
        return grad_out * 3 * x**2

    def cube_backward_backward(grad_out, sav_grad_out, x):
        return grad_out * sav_grad_out * 6 * x

    def cube_backward_backward_grad_out(grad_out, x):
        return grad_out * 3 * x**2

    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return cube_forward(x)

        @staticmethod
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return CubeBackward.apply(grad_out, x)

    class CubeBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, grad_out, x):
            ctx.save_for_backward(x, grad_out)
            return cube_backward(grad_out, x)

        @staticmethod
        def backward(ctx, grad_out):
            x, sav_grad_out = ctx.saved_tensors
            dx = cube_backward_backward(grad_out, sav_grad_out, x)
            dgrad_out = cube_backward_backward_grad_out(grad_out, x)
            return dgrad_out, dx

    x = torch.tensor(2., requires_grad=True, dtype=torch.double)
    cube = [torch.autograd.gradcheck(Cube.apply, x), torch.autograd.gradgradcheck(Cube.apply, x)]
    out = Cube.apply(x)
    grad_x, = torch.autograd.grad(out, x, create_graph=True)
    cube.append([grad_x, torch.autograd.grad(grad_x, x)[0], grad_x.grad_fn.name()])
    return {"square": square, "exp": exp, "sinh": sinh_checks, "sinh_bad": sinh_bad,
            "cube": cube}


EXAMPLES = {
    fn.__name__: fn
    for fn in (linear_separate, linear_combined, mul_constant, my_cube, ctx_docstrings,
               mark_dirty, exp_docstring, double_backward_tutorial)
}
# Examples whose kit run warns where PyTorch is silent, and the warning's text.
KIT_WARNS = {"double_backward_tutorial": "save_for_backward"}


def write_expected(path):
    """Store every example's results under real PyTorch (run this file with torch installed)."""
    import json

    import torch

    results = {name: plain(fn(torch)) for name, fn in sorted(EXAMPLES.items())}
    with open(path, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    import pathlib

    write_expected(pathlib.Path(__file__).parent / "data" / "extending_pytorch_expected.json")
