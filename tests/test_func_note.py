"""Every example of PyTorch's "Extending torch.func with autograd.Function" note runs unchanged
under `import kit.torch as torch` and gives PyTorch's numbers.

`note_examples(torch)` is the note's code (NumPy-backed NumpySort/NumpyTake under grad, MyCube
under grad(grad), generate_vmap_rule, vmap staticmethods, jvp), run with a given `torch` module.
The values it returned on real PyTorch 2.13 are stored below, so the test needs no PyTorch; when
PyTorch is installed it is also run live as the oracle.
"""

import warnings

import numpy as np
import pytest

import kit.torch


def note_examples(torch, rng_seed=0):
    """Every example of PyTorch's "Extending torch.func with autograd.Function" note, verbatim
    apart from the inputs (drawn with NumPy so kit and PyTorch see the same numbers)."""
    rng = np.random.default_rng(rng_seed)
    results = {}

    def to_numpy(tensor):
        return tensor.cpu().numpy()

    # --- Example 1: autograd.Function calls into another system ---------------------------
    class NumpySort(torch.autograd.Function):
        # Note that forward does not take ctx
        @staticmethod
        def forward(x, dim):
            device = x.device
            x = to_numpy(x)
            ind = np.argsort(x, axis=dim)
            ind_inv = np.argsort(ind, axis=dim)
            result = np.take_along_axis(x, ind, axis=dim)
            # Any intermediates to be saved in backward must be returned as
            # outputs.
            return (
                # The desired output
                torch.tensor(result, device=device),
                # intermediate to save for backward
                torch.tensor(ind, device=device),
                # intermediate to save for backward
                torch.tensor(ind_inv, device=device),
            )

        # setup_context is responsible for calling methods and/or assigning to
        # the ctx object. Please do not do additional compute (e.g. add
        # Tensors together) in setup_context.
        @staticmethod
        def setup_context(ctx, inputs, output):
            x, dim = inputs
            # Note that output is whatever you returned from forward.
            # If you returned multiple values, then output is a Tuple of multiple values.
            # If you returned a single Tensor, then output is a Tensor.
            # If you returned a Tuple with a single Tensor, then output is a
            # Tuple with a single Tensor.
            _, ind, ind_inv = output
            ctx.mark_non_differentiable(ind, ind_inv)
            # Tensors must be saved via ctx.save_for_backward. Please do not
            # assign them directly onto the ctx object.
            ctx.save_for_backward(ind, ind_inv)
            # Non-tensors may be saved by assigning them as attributes on the ctx object.
            ctx.dim = dim

        @staticmethod
        def backward(ctx, grad_output, _0, _1):
            # For the autograd.Function to be arbitrarily composable with function
            # transforms, all staticmethod other than forward and setup_context
            # must be implemented in a "transformable" way; that is, they must
            # only consist of PyTorch operations or autograd.Function.
            #
            # For example, this allows us to do double backwards and/or compute
            # second order gradients.
            #
            # We've written the backward pass of NumpySort in terms of another
            # autograd.Function, NumpyTake.
            ind, ind_inv = ctx.saved_tensors
            return NumpyTake.apply(grad_output, ind_inv, ind, ctx.dim), None

    class NumpyTake(torch.autograd.Function):
        @staticmethod
        def forward(x, ind, ind_inv, dim):
            device = x.device
            x = to_numpy(x)
            ind = to_numpy(ind)
            return torch.tensor(np.take_along_axis(x, ind, dim), device=device)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, ind, ind_inv, dim = inputs
            ctx.save_for_backward(ind, ind_inv)
            ctx.dim = dim

        @staticmethod
        def backward(ctx, grad_output):
            ind, ind_inv = ctx.saved_tensors
            result = NumpyTake.apply(grad_output, ind_inv, ind, ctx.dim)
            return result, None, None, None

    def numpy_sort(x, dim=-1):
        result, _, _ = NumpySort.apply(x, dim)
        return result

    x = torch.tensor(rng.standard_normal((2, 3)).astype(np.float32))
    grad_x = torch.func.grad(lambda x: numpy_sort(x).sum())(x)
    assert torch.allclose(grad_x, torch.ones_like(x))
    results["example1_grad"] = grad_x
    results["example1_sorted"] = numpy_sort(x)

    # --- Example 2: autograd.Function specifies custom gradient rules ---------------------
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

    # Wrap MyCube in a function so that it is clearer what the output is
    def my_cube(x):
        result, _ = MyCube.apply(x)
        return result

    x = torch.tensor(np.float32(rng.standard_normal()))
    ggx = torch.func.grad(torch.func.grad(my_cube))(x)
    assert torch.allclose(ggx, 6 * x)
    results["example2_ggx"] = ggx

    # --- vmap: automatically generate a vmap rule ------------------------------------------
    class MyCubeVmap(torch.autograd.Function):
        # Set generate_vmap_rule to True to ask PyTorch to automatically generate
        # a vmap rule.
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            result = x ** 3
            dx = 3 * x ** 2
            return result, dx

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, = inputs
            result, dx = output
            ctx.save_for_backward(x, dx)

        @staticmethod
        def backward(ctx, grad_output, grad_dx):
            x, dx = ctx.saved_tensors
            result = grad_output * dx + grad_dx * 6 * x
            return result

    def my_cube_vmap(x):
        result, dx = MyCubeVmap.apply(x)
        return result

    x = torch.tensor(rng.standard_normal(3).astype(np.float32))
    result = torch.vmap(my_cube_vmap)(x)
    assert torch.allclose(result, x ** 3)
    results["generated_rule"] = result
    results["generated_rule_grad"] = torch.vmap(torch.func.grad(my_cube_vmap))(x)

    # --- vmap: defining the vmap staticmethod ----------------------------------------------
    class NumpySortV(torch.autograd.Function):
        @staticmethod
        def forward(x, dim):
            device = x.device
            x = to_numpy(x)
            ind = np.argsort(x, axis=dim)
            ind_inv = np.argsort(ind, axis=dim)
            result = np.take_along_axis(x, ind, axis=dim)
            return (
                torch.tensor(result, device=device),
                torch.tensor(ind, device=device),
                torch.tensor(ind_inv, device=device),
            )

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, dim = inputs
            _, ind, ind_inv = output
            ctx.mark_non_differentiable(ind, ind_inv)
            ctx.save_for_backward(ind, ind_inv)
            ctx.dim = dim

        @staticmethod
        def backward(ctx, grad_output, _0, _1):
            ind, ind_inv = ctx.saved_tensors
            return NumpyTakeV.apply(grad_output, ind_inv, ind, ctx.dim), None

        # The signature of the vmap staticmethod is:
        # vmap(info, in_dims: Tuple[Optional[int]], *args)
        # where *args is the same as the arguments to `forward`.
        @staticmethod
        def vmap(info, in_dims, x, dim):
            # For every input (x and dim), in_dims stores an Optional[int]
            # that is:
            # - None if the input is not being vmapped over or if the input
            #   is not a Tensor
            # - an integer if the input is being vmapped over that represents
            #   the index of the dimension being vmapped over.
            x_bdim, _ = in_dims

            # A "vmap rule" is the logic of how to perform the operation given
            # inputs with one additional dimension. In NumpySort, x has an
            # additional dimension (x_bdim). The vmap rule is simply
            # to call NumpySort again but pass it a different `dim`.
            x = x.movedim(x_bdim, 0)
            # Handle negative dims correctly
            dim = dim if dim >= 0 else dim + x.dim() - 1
            result = NumpySortV.apply(x, dim + 1)  # noqa: F841 - as in the note

            # The vmap rule must return a tuple of two things
            # 1. the output. Should be the same amount of things
            #    as returned by the forward().
            # 2. one Optional[int] for each output specifying if each output
            # is being vmapped over, and if so, the index of the
            # dimension being vmapped over.
            #
            # NumpySort.forward returns a Tuple of 3 Tensors. Since we moved the
            # dimension being vmapped over to the front of `x`, that appears at
            # dimension 0 of all outputs.
            # The return is (output, out_dims) -- output is a tuple of 3 Tensors
            # and out_dims is a Tuple of 3 Optional[int]
            return NumpySortV.apply(x, dim + 1), (0, 0, 0)

    class NumpyTakeV(torch.autograd.Function):
        @staticmethod
        def forward(x, ind, ind_inv, dim):
            device = x.device
            x = to_numpy(x)
            ind = to_numpy(ind)
            return torch.tensor(np.take_along_axis(x, ind, dim), device=device)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, ind, ind_inv, dim = inputs
            ctx.save_for_backward(ind, ind_inv)
            ctx.dim = dim

        @staticmethod
        def backward(ctx, grad_output):
            ind, ind_inv = ctx.saved_tensors
            result = NumpyTakeV.apply(grad_output, ind_inv, ind, ctx.dim)
            return result, None, None, None

        @staticmethod
        def vmap(info, in_dims, x, ind, ind_inv, dim):
            x_bdim, ind_bdim, ind_inv_bdim, _ = in_dims

            # The strategy is: expand {x, ind, ind_inv} to all have the dimension
            # being vmapped over.
            # Then, call back into NumpyTake(expanded_x, expanded_ind, expanded_ind_inv, new_dim).

            # Handle negative dims by wrapping them to be positive
            logical_dim = x.dim() if x_bdim is None else x_bdim - 1
            dim = dim if dim >= 0 else dim + logical_dim

            def maybe_expand_bdim_at_front(x, x_bdim):
                if x_bdim is None:
                    return x.expand(info.batch_size, *x.shape)
                return x.movedim(x_bdim, 0)

            # If the Tensor doesn't have the dimension being vmapped over,
            # expand it out. Otherwise, move it to the front of the Tensor
            x = maybe_expand_bdim_at_front(x, x_bdim)
            ind = maybe_expand_bdim_at_front(ind, ind_bdim)
            ind_inv = maybe_expand_bdim_at_front(ind_inv, ind_inv_bdim)

            # The return is a tuple (output, out_dims). Since output is a Tensor,
            # then out_dims is an Optional[int] (instead of being a Tuple).
            return NumpyTakeV.apply(x, ind, ind_inv, dim + 1), 0

    def numpy_sort_v(x, dim=-1):
        result, _, _ = NumpySortV.apply(x, dim)
        return result

    x = torch.tensor(rng.standard_normal((2, 3)).astype(np.float32))
    result = torch.vmap(numpy_sort_v)(x)
    assert torch.allclose(result, numpy_sort_v(result, 1))
    results["vmap_staticmethod"] = result
    results["vmap_staticmethod_grad"] = torch.vmap(
        torch.func.grad(lambda r: (numpy_sort_v(r) * torch.arange(3.0)).sum()))(x)

    # --- torch.func.jvp support ------------------------------------------------------------
    class NumpySortJ(NumpySortV):
        @staticmethod
        def setup_context(ctx, inputs, output):
            x, dim = inputs
            _, ind, ind_inv = output
            ctx.mark_non_differentiable(ind, ind_inv)
            ctx.save_for_backward(ind, ind_inv)
            ctx.save_for_forward(ind, ind_inv)
            ctx.dim = dim

        @staticmethod
        def jvp(ctx, x_tangent, _):
            ind, ind_inv = ctx.saved_tensors
            return NumpyTakeV.apply(x_tangent, ind, ind_inv, ctx.dim), None, None

    x = torch.tensor(rng.standard_normal((2, 3)).astype(np.float32))
    t = torch.tensor(rng.standard_normal((2, 3)).astype(np.float32))
    _, jvp_out = torch.func.jvp(lambda x: NumpySortJ.apply(x, -1)[0], (x,), (t,))
    results["jvp"] = jvp_out
    return {k: np.array(v.detach().cpu().numpy()) for k, v in results.items()}


NOTE_EXPECTED = {'example1_grad': [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]],
 'example1_sorted': [[-0.132105, 0.12573, 0.640423], [-0.535669, 0.1049, 0.361595]],
 'example2_ggx': 7.824,
 'generated_rule': [0.849496, -0.34852, -2.026309],
 'generated_rule_grad': [2.690887, 1.48573, 4.803875],
 'vmap_staticmethod': [[-2.325031, -0.623274, 0.041326], [-1.245911, -0.732267, -0.218792]],
 'vmap_staticmethod_grad': [[1.0, 2.0, 0.0], [2.0, 0.0, 1.0]],
 'jvp': [[-0.665195, 0.35151, 0.90347], [-0.743499, 0.094012, -0.921725]]}


def test_note_examples_match_pytorch_stored_values():
    got = note_examples(kit.torch)
    assert set(got) == set(NOTE_EXPECTED)
    for name, value in got.items():
        np.testing.assert_allclose(value, NOTE_EXPECTED[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_note_examples_match_live_pytorch():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        # torch.vmap's first call warns that torch.jit.script (used inside torch) is deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        want = note_examples(torch)
    got = note_examples(kit.torch)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
