"""mx.autograd.backward with grad_req='write' gives a variable's grad NDArray the fresh gradient's
storage instead of copying into it (one memory pass less per training step). What MXNet users
rely on still holds: `x.grad` is the same NDArray before and after, writes into it are seen, and
no two buffers, nor a buffer and a head gradient, ever share storage."""

import numpy as np

import kit.mx as mx
from kit.mx import autograd, nd


def test_grad_ndarray_keeps_its_identity_and_shows_new_values():
    x = nd.array([[1.0, 2.0], [3.0, 4.0]])
    w = nd.array([[1.0], [1.0]])
    w.attach_grad()
    held = w.grad
    before = held.tensor
    for scale in (1.0, 2.0):
        with autograd.record():
            y = nd.dot(x * scale, w)
        y.backward()
        assert w.grad is held
        np.testing.assert_array_equal(held.asnumpy(), scale * np.array([[4.0], [6.0]]))
    assert held.tensor is not before  # the fresh gradient was taken, not copied
    held[:] = 0
    np.testing.assert_array_equal(w.grad.asnumpy(), 0)


def test_two_variables_with_one_gradient_get_separate_buffers():
    a, b = nd.ones((3,)), nd.ones((3,))
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = a + b
    y.backward()
    a.grad[:] = 5
    np.testing.assert_array_equal(b.grad.asnumpy(), 1)


def test_a_head_gradient_passed_through_is_copied_not_shared():
    x = nd.ones((3,))
    x.attach_grad()
    head = nd.array([1.0, 2.0, 3.0])
    with autograd.record():
        y = x + 0
    y.backward(head)
    head[:] = 7
    np.testing.assert_array_equal(x.grad.asnumpy(), [1, 2, 3])


def test_add_and_null_requests_are_unchanged():
    x = nd.array([1.0, 2.0])
    x.attach_grad(grad_req="add")
    for _ in range(3):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), 3 * 2 * np.array([1, 2]))
    z = nd.array([1.0])
    z.attach_grad(grad_req="null")
    with autograd.record():
        out = z * 2 + x.sum()
    out.backward()
    np.testing.assert_array_equal(z.grad.asnumpy(), 0)
    assert mx.autograd.is_recording() is False
