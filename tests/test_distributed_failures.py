"""kit.distributed never hangs: a rank that raises, stalls or dies ends the whole job within the
collective timeout (5 s in the script), and the survivors' error names the failed rank; ranks
whose models differ get a ValueError naming the parameter from broadcast_parameters."""

import re

import pytest
from dist_helpers import mpirun, needs_mpi

pytestmark = [pytest.mark.dist, needs_mpi]


def test_a_rank_that_raises_stops_every_rank_with_its_error():
    # a long grace, so that every survivor prints its reason before the abort, even on a busy CI
    result = mpirun(4, "failures.py", "raise", 2, timeout=60, check=False,
                    env={"KIT_DIST_ABORT_GRACE": "3"})
    out = result.stdout
    assert result.returncode != 0, out
    assert "kit.distributed: rank 2 of 4 failed" in out
    assert "ValueError: a bad batch on purpose" in out
    survivors = set(re.findall(r"kit\.distributed: rank (\d): rank 2 failed: ValueError", out))
    assert survivors == {"0", "1", "3"}, out  # each one says why it stops
    assert "finished" not in out


def test_a_stalled_rank_ends_in_a_timeout_not_a_hang():
    result = mpirun(2, "failures.py", "stall", 1, timeout=60, check=False)
    out = result.stdout
    assert result.returncode != 0, out
    assert "did not complete within 5 s on rank 0 of 2" in out
    assert "KIT_DIST_TIMEOUT" in out  # the fix is named


def test_a_killed_rank_ends_the_job():
    """SIGKILL leaves the rank no Python to report with, and MPICH's mpiexec SIGKILLs every
    other rank as soon as it sees it die (kit.distributed.launch says why no survivor can name
    it): the job ends at once, it never hangs."""
    result = mpirun(4, "failures.py", "kill", 1, timeout=60, check=False)
    assert result.returncode != 0, result.stdout
    assert "finished" not in result.stdout
    assert "Killed" in result.stdout or "signal 9" in result.stdout


def test_broadcast_parameters_names_a_mismatched_parameter_on_every_rank():
    out = mpirun(3, "failures.py", "mismatch", 1, timeout=60).stdout
    caught = re.findall(r"rank (\d) caught: (.*)", out)
    assert sorted(rank for rank, _ in caught) == ["0", "1", "2"], out
    for _, message in caught:
        assert "parameter '0.bias' has shape (5,)" in message
        assert "on rank 1 but (4,)" in message and "root rank 0" in message


def test_broadcast_parameters_names_parameters_missing_on_a_rank():
    out = mpirun(2, "failures.py", "count", 1, timeout=60).stdout
    caught = re.findall(r"rank (\d) caught: (.*)", out)
    assert sorted(rank for rank, _ in caught) == ["0", "1"], out
    for _, message in caught:
        assert "rank 1 has 6 parameters and root rank 0 has 4" in message
        assert "only on rank 1: ['3.bias', '3.weight']" in message
