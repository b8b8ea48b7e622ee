"""The README's code is real: its Python block runs and its commented results hold."""

import pathlib
import re

import kit

README = pathlib.Path(__file__).parents[1] / "README.md"


def test_readme_first_taste_runs_and_its_claims_hold():
    (block,) = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    namespace = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert repr(namespace["x"].grad) == "tensor(14.)"  # the comment in the block says so
    x = kit.tensor([0.5, -2.0, 3.0], dtype=kit.float64, requires_grad=True)
    assert kit.gradcheck(namespace["Square"].apply, (x,))


def test_readme_commands_name_the_real_entry_points():
    text = README.read_text()
    assert "python -m pytest --nbval --nbval-current-env --nbval-sanitize-with " \
           "notebooks/sanitize.cfg" in text
    for path in ("notebooks/sanitize.cfg", "scripts/gpu_check.sh", "benchmarks/run.py",
                 "benchmarks/RESULTS.md", "kit/bench/__main__.py", "environment.yml"):
        assert (README.parent / path).exists(), path


def test_readme_lesson_command_stays_on_localhost_and_says_how_to_run_as_root():
    text = README.read_text()
    (command,) = [line for line in text.splitlines() if "jupyter lab" in line and "pip" in line]
    assert command.endswith("jupyter lab --ip=127.0.0.1 notebooks/")
    assert "jupyter lab --ip=127.0.0.1 --allow-root notebooks/" in text
