"""The benchmark workloads compute the same numbers in kit as in their NumPy baselines.

Timings are never asserted here; this only keeps benchmarks/ honest and runnable.
"""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import chains, harness, large, mlp, run  # noqa: E402

TINY = {"mlp_batch": 8, "tiny_n": 30, "large_n": 1000, "deep": (200, 2000)}


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def test_mlp_step_matches_numpy_over_steps():
    impls = mlp.impls(batch=8, sizes=(20, 16, 16, 5))
    for _ in range(3):  # several steps: the SGD updates must agree too
        (k_loss, k_params), (n_loss, n_params) = impls["kit"](), impls["numpy"]()
        assert np.isfinite(k_loss)
        _close(k_loss, n_loss)
        for k, n in zip(k_params, n_params, strict=True):
            assert k.dtype == n.dtype == np.float32
            _close(k, n)


def test_tiny_chain_matches_numpy():
    impls = chains.tiny_impls(n=30)
    kit_g, np_g = impls["kit"](), impls["numpy"]()
    assert np.abs(np_g).min() > 1e-3  # the workload keeps gradients away from denormals
    _close(kit_g, np_g)
    _close(impls["kit"](), np_g)  # grads were reset: a second run gives the same, not double


def test_large_elementwise_matches_numpy():
    impls = large.impls(size=1000)
    _close(impls["kit"](), impls["numpy"](), rtol=1e-5, atol=1e-5)


def test_deep_chain_matches_numpy_and_closed_form():
    impls = chains.deep_impls(n=2001)
    g = impls["kit"]()
    _close(g, impls["numpy"]())
    _close(g, 0.9999 ** 1001, rtol=1e-4)


def test_quick_cases_agree_with_numpy_and_torch():
    torch = harness.import_torch()
    for case in run.cases(torch, TINY):
        out = {name: fn() for name, fn in case.impls.items()}
        for name, value in out.items():
            if name == "kit":
                continue
            if isinstance(value, tuple):  # the MLP: (loss, params)
                _close(out["kit"][0], value[0], rtol=1e-4)
                for k, v in zip(out["kit"][1], value[1], strict=True):
                    _close(k, v, rtol=1e-4, atol=1e-5)
            else:
                _close(out["kit"], value, rtol=1e-4, atol=1e-5)


def test_table_reports_ratios_and_verdicts():
    case = harness.Case("w", {"kit": lambda: None, "numpy": lambda: None}, target="<= 2x",
                        limit=("numpy", 2.0))
    case.samples = {"kit": [3.0, 3.0, 9.0], "numpy": [2.0, 1.0, 3.0]}
    case.results = {"kit": 3.0, "numpy": 2.0}
    assert harness.ratios(case) == {"numpy": pytest.approx(3.0)}
    assert harness.verdict(case) == "MISSED"
    text = harness.table([case])
    assert "3.00x" in text and "MISSED" in text


def test_thread_time_runs_this_checkout_and_another(capsys):
    """benchmarks.thread_time times this checkout, or another one given by path (here: this one,
    in a fresh process, since it imports kit afresh from that path)."""
    import subprocess

    from benchmarks import thread_time

    thread_time.main(["--steps", "1"])
    outputs = [capsys.readouterr().out]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    outputs.append(subprocess.run(
        [sys.executable, "-m", "benchmarks.thread_time", "--steps", "1", root], cwd=root,
        capture_output=True, text=True, check=True, timeout=300).stdout)
    for out in outputs:
        assert "MLP step / NumPy: numpy" in out and "compiled" in out
        assert "module layers / bare kit step: bare" in out and "gluon" in out
