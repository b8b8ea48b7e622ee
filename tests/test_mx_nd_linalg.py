"""mx.nd.linalg: values against NumPy, gradients by finite differences, MXNet's errors."""

import itertools

import numpy as np
import pytest
from mx_helpers import check_nd, f64

import kit.mx as mx

RNG = np.random.default_rng(12)


def _spd(n, batch=()):
    x = RNG.normal(size=batch + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _lower(n, batch=()):
    return np.tril(RNG.normal(size=batch + (n, n))) + 3 * np.eye(n)


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_gemm_and_gemm2_match_numpy_and_gradcheck(ta, tb):
    a, b = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 4, 5))
    a = np.swapaxes(a, -1, -2) if ta else a
    b = np.swapaxes(b, -1, -2) if tb else b
    c = RNG.normal(size=(2, 3, 5))
    opa = np.swapaxes(a, -1, -2) if ta else a
    opb = np.swapaxes(b, -1, -2) if tb else b
    got = mx.nd.linalg.gemm(f64(a), f64(b), f64(c), transpose_a=ta, transpose_b=tb, alpha=2.0,
                            beta=0.5)
    np.testing.assert_allclose(got.asnumpy(), 2 * opa @ opb + 0.5 * c, rtol=1e-12)
    got2 = mx.nd.linalg.gemm2(f64(a), f64(b), transpose_a=ta, transpose_b=tb, alpha=3.0)
    np.testing.assert_allclose(got2.asnumpy(), 3 * opa @ opb, rtol=1e-12)
    check_nd(lambda a, b, c: mx.nd.linalg.gemm(a, b, c, transpose_a=ta, transpose_b=tb,
                                               alpha=2.0, beta=0.5), a, b, c)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_potrf_matches_numpy_cholesky_and_gradcheck(batch):
    a = _spd(4, batch)
    np.testing.assert_allclose(mx.nd.linalg.potrf(f64(a)).asnumpy(), np.linalg.cholesky(a),
                               rtol=1e-10)
    check_nd(mx.nd.linalg.potrf, a)


def test_potrf_reads_only_the_lower_triangle():
    a = _spd(3)
    garbage = a + np.triu(RNG.normal(size=(3, 3)), 1)
    np.testing.assert_allclose(mx.nd.linalg.potrf(f64(garbage)).asnumpy(),
                               np.linalg.cholesky(a), rtol=1e-10)


def test_potrf_of_a_matrix_that_is_not_positive_definite():
    x = mx.nd.array([[1, 2], [3, 4]])
    with pytest.raises(mx.MXNetError, match="potrf.*not symmetric positive definite") as info:
        mx.nd.linalg.potrf(mx.nd.dot(x, x))
    assert isinstance(info.value, np.linalg.LinAlgError)


@pytest.mark.parametrize("transpose,rightside,lower",
                         list(itertools.product([False, True], repeat=3)))
def test_trsm_every_variant_matches_numpy_and_gradchecks(transpose, rightside, lower):
    tri = _lower(3) if lower else _lower(3).T
    stored = tri + (np.triu if lower else np.tril)(RNG.normal(size=(3, 3)), 1 if lower else -1)
    op = tri.T if transpose else tri
    b = RNG.normal(size=(3, 2) if not rightside else (2, 3))
    want = np.linalg.solve(op, 1.5 * b) if not rightside else np.linalg.solve(op.T, 1.5 * b.T).T
    kwargs = dict(transpose=transpose, rightside=rightside, lower=lower, alpha=1.5)
    got = mx.nd.linalg.trsm(f64(stored), f64(b), **kwargs)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10)
    check_nd(lambda a, b: mx.nd.linalg.trsm(a, b, **kwargs), tri, b)


@pytest.mark.parametrize("transpose,rightside,lower",
                         list(itertools.product([False, True], repeat=3)))
def test_trmm_matches_numpy(transpose, rightside, lower):
    stored = RNG.normal(size=(3, 3))
    tri = np.tril(stored) if lower else np.triu(stored)
    op = tri.T if transpose else tri
    b = RNG.normal(size=(3, 2) if not rightside else (2, 3))
    kwargs = dict(transpose=transpose, rightside=rightside, lower=lower, alpha=2.0)
    got = mx.nd.linalg.trmm(f64(stored), f64(b), **kwargs)
    np.testing.assert_allclose(got.asnumpy(), 2 * (b @ op if rightside else op @ b), rtol=1e-12)
    check_nd(lambda a, b: mx.nd.linalg.trmm(a, b, **kwargs), stored, b)


def test_potri_sumlogdiag_syrk():
    a = _spd(3, (2,))
    chol = np.linalg.cholesky(a)
    np.testing.assert_allclose(mx.nd.linalg.potri(f64(chol)).asnumpy(), np.linalg.inv(a),
                               rtol=1e-10)
    np.testing.assert_allclose(mx.nd.linalg.sumlogdiag(f64(chol)).asnumpy(),
                               0.5 * np.linalg.slogdet(a)[1], rtol=1e-10)
    x = RNG.normal(size=(2, 3, 4))
    np.testing.assert_allclose(mx.nd.linalg.syrk(f64(x), alpha=2.0).asnumpy(),
                               2 * x @ np.swapaxes(x, -1, -2), rtol=1e-12)
    np.testing.assert_allclose(mx.nd.linalg.syrk(f64(x), transpose=True).asnumpy(),
                               np.swapaxes(x, -1, -2) @ x, rtol=1e-12)
    check_nd(mx.nd.linalg.potri, chol)
    check_nd(mx.nd.linalg.sumlogdiag, chol)
    check_nd(lambda x: mx.nd.linalg.syrk(x, transpose=True), x)


def test_gaussian_log_likelihood_through_potrf_and_trsm_trains_like_a_custom_op_would():
    # the pattern of MXNet's linalg examples: log N(y; 0, K) via L = potrf(K), z = trsm(L, y)
    k, y = _spd(3), RNG.normal(size=(3, 1))

    def nll(k, y):
        chol = mx.nd.linalg.potrf(k)
        z = mx.nd.linalg.trsm(chol, y)
        return 0.5 * mx.nd.sum(z * z) + mx.nd.linalg.sumlogdiag(chol)

    want = 0.5 * (y.T @ np.linalg.solve(k, y)).item() + 0.5 * np.linalg.slogdet(k)[1]
    np.testing.assert_allclose(nll(f64(k), f64(y)).asnumpy(), [want], rtol=1e-10)
    check_nd(nll, k, y)


@pytest.mark.parametrize("call,match", [
    (lambda: mx.nd.linalg.gemm2(mx.nd.ones((2, 3)), mx.nd.ones((2, 3))), "cannot multiply"),
    (lambda: mx.nd.linalg.gemm(mx.nd.ones((2, 3)), mx.nd.ones((3, 2)), mx.nd.ones((3, 3))),
     "C has shape"),
    (lambda: mx.nd.linalg.potrf(mx.nd.ones((2, 3))), "must be square"),
    (lambda: mx.nd.linalg.trsm(mx.nd.ones((2, 2)), mx.nd.ones((3, 1))), "rows must number 2"),
    (lambda: mx.nd.linalg.potrf(mx.nd.ones((3,))), "at least 2 dimensions"),
])
def test_shape_errors_name_the_op_and_are_mxnet_errors(call, match):
    with pytest.raises(mx.MXNetError, match=match) as info:
        call()
    assert isinstance(info.value, ValueError)
