"""Lesson 13 beyond nbval: it runs without numba (fused groups become NumPy kernels, and it says
so), and what it states about torch.compile holds in PyTorch 2.13 (TorchDynamo with the "eager"
and "aot_eager" backends, which need no C++ compiler)."""

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "notebooks" / "13_graph_capture_and_fusion.ipynb"


def _cells():
    return json.loads(LESSON.read_text())["cells"]


def _text():
    return " ".join(" ".join("".join(c["source"]) for c in _cells()).split())


@pytest.mark.slow
def test_the_lesson_runs_and_checks_itself_without_numba(tmp_path):
    code = "\n".join("".join(c["source"]) for c in _cells() if c["cell_type"] == "code"
                     and "raises-exception" not in c["metadata"].get("tags", []))
    code = "\n".join(line for line in code.splitlines() if not line.startswith("%"))
    hidden = tmp_path / "numba"
    hidden.mkdir()
    (hidden / "__init__.py").write_text('raise ImportError("hidden by the test")\n')
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    script = tmp_path / "lesson.py"  # a file: the lesson reads its functions' source lines
    script.write_text(code)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            env=env, cwd=tmp_path, timeout=600, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "numba is not installed: fused groups run as NumPy calls into reused buffers" in out
    assert "section 2's group (8 elements), numpy kernel:" in out
    assert "fused group: ['mul', 'add', 'tanh', 'mul', 'exp']" in out


def test_what_the_lesson_says_about_torch_compile_holds_in_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch is the oracle; it is not installed")
    import torch._dynamo as dynamo
    from torch._dynamo.testing import CompileCounter

    text = _text()

    def branchy(x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1

    def reads_item(x):
        return x / x.abs().sum().item()

    def prints(x):
        y = x * 2
        print("y =", y)
        return y + 1

    x = torch.tensor([0.5, 1.5, -0.25])
    # a data-dependent `if` and print() are graph breaks: two graphs, Python in between
    assert "a graph break: two graphs, Python in between" in text
    assert "so `prints` becomes two compiled graphs around a `print`" in text
    for fn in (branchy, prints, reads_item):
        found = dynamo.explain(fn)(x)
        assert (found.graph_count, found.graph_break_count) == (2, 1), fn.__name__
    # fullgraph=True raises for the branch and the print, and captures .item()
    assert "under `fullgraph=True` it captures `.item()` into the graph" in text
    for fn in (branchy, prints):
        dynamo.reset()
        with pytest.raises(dynamo.exc.Unsupported):
            torch.compile(fn, fullgraph=True, backend="eager")(x)
    dynamo.reset()
    counter = CompileCounter()
    item = torch.compile(reads_item, fullgraph=True, backend=counter)
    item(x)
    item(x * 2)
    assert counter.frame_count == 1
    # the recompile limit is 8, and a new shape makes the dimension dynamic after one recompile
    assert "`torch._dynamo.config.recompile_limit`" in text and "(8 by default" in text
    assert dynamo.config.recompile_limit == 8
    assert "a new graph, then one **dynamic** graph for all shapes" in text
    dynamo.reset()
    counter = CompileCounter()
    shaped = torch.compile(lambda x: (x * 2).exp(), backend=counter)
    for n in (2, 3, 4, 5, 2):
        shaped(torch.ones(n))
    assert counter.frame_count == 2
    # an in-place change of an input stays in the graph
    assert "captured (functionalised, written back)" in text

    def inplace(x):
        x.mul_(2)
        return x + 1

    found = dynamo.explain(inplace)(torch.ones(3))
    assert (found.graph_count, found.graph_break_count) == (1, 0)
    # no double backward through AOTAutograd
    message = "torch.compile with aot_autograd does not currently support double backward"
    assert message in text
    dynamo.reset()
    cubic = torch.compile(lambda x: (x * x * x).sin().sum(), backend="aot_eager")
    xd = torch.tensor([0.5, 1.0], requires_grad=True)
    (g,) = torch.autograd.grad(cubic(xd), xd, create_graph=True)
    with pytest.raises(RuntimeError, match=message):
        torch.autograd.grad(g.sum(), xd)
    # the optimiser step compiles; compiled autograd and torch.jit.trace exist
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(4, 3)).sum().backward()
    dynamo.reset()
    counter = CompileCounter()
    with warnings.catch_warnings():  # raised inside torch's own tracing of SGD.step
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated",
                                DeprecationWarning)
        torch.compile(opt.step, backend=counter)()
    assert counter.frame_count == 1
    assert hasattr(dynamo.config, "compiled_autograd") and callable(torch.jit.trace)
    # loss.backward() inside a compiled function is a graph break, unless trace_autograd_ops
    assert "Unsupported Tensor.backward() call" in text and "trace_autograd_ops" in text
    assert dynamo.config.trace_autograd_ops is False

    def train_step(x):
        loss = model(x).sum()
        loss.backward()
        return loss

    dynamo.reset()
    with pytest.raises(Exception, match="Unsupported Tensor.backward\\(\\) call"):
        torch.compile(train_step, backend="eager", fullgraph=True)(torch.ones(4, 3))


def test_what_the_lesson_says_pytorchs_profiler_shows_holds():
    torch = pytest.importorskip("torch", reason="PyTorch is the oracle; it is not installed")
    import torch._dynamo as dynamo
    from torch.profiler import ProfilerActivity, profile

    text = _text()
    assert "a `CompiledFunction` event for the forward and one `CompiledFunctionBackward` node" \
           in text and "`Torch-Compiled Region` event too" in text
    dynamo.reset()
    compiled = torch.compile(lambda x, w: ((x * w + 0.5).tanh() * x).exp().sum(),
                             backend="aot_eager")
    x = torch.linspace(-1, 1, 100, requires_grad=True)
    w = torch.ones(100)
    compiled(x, w).backward()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        compiled(x, w).backward()
    keys = {e.key for e in prof.key_averages()}
    assert {"CompiledFunction", "CompiledFunctionBackward"} <= keys
    assert any(k.startswith("Torch-Compiled Region") for k in keys)


@pytest.mark.slow
def test_inductor_names_the_lessons_kernel_as_the_lesson_says(tmp_path, monkeypatch):
    """The one claim that needs Inductor itself (a C++ compiler; 5-25 s on the CI machine)."""
    torch = pytest.importorskip("torch", reason="PyTorch is the oracle; it is not installed")
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        pytest.skip("no C++ compiler here: torch.compile's Inductor cannot build CPU kernels")
    import torch._dynamo as dynamo
    from torch._inductor.utils import run_and_get_code

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))  # no kernels left behind
    assert "Inductor calls this function's forward kernel `cpp_fused_add_exp_mul_tanh_0`" in _text()
    dynamo.reset()
    five = torch.compile(lambda x, w, c: ((x * w + c).tanh() * x).exp())
    x = torch.randn(64, requires_grad=True)
    _, sources = run_and_get_code(lambda: five(x, torch.randn(64), torch.randn(64)).sum())
    assert any("cpp_fused_add_exp_mul_tanh_0" in source for source in sources)
