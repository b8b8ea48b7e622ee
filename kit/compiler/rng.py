"""Random numbers in a trace: a replay draws fresh ones, as the eager function would.

kit's random functions (kit.rand, randn, randint) are steps of the graph, so a replay draws anew
from the same generator. A draw made any other way while a trace runs (the generator called
directly, kit.mx's generator) would be baked into the graph: `Watched` reports it, and the
function runs eagerly. `states` / `restore` put the generators back after a trace, so that the
first replay draws exactly what the eager call would have.
"""

from __future__ import annotations

import sys
import threading

from kit import _creation
from kit.compiler.guards import user_line
from kit.grad_mode import STATE


def _places():
    """(owner, key) of every generator kit draws from: kit's, and kit.mx's once imported."""
    places = [(_creation._Random, "generator")]
    mx_random = sys.modules.get("kit.mx.random")
    if mx_random is not None:
        places.append((mx_random._GENERATOR, 0))
    return places


def states():
    """The state of every generator."""
    return [_get(owner, key).bit_generator.state for owner, key in _places()]


def restore(saved):
    """Put the generators back in the states `states()` gave."""
    for (owner, key), state in zip(_places(), saved, strict=False):
        _get(owner, key).bit_generator.state = state


class Watched:
    """While a trace runs, draws from kit's random generators outside kit's traced random
    functions are breaks (replaying the graph would repeat the traced numbers)."""

    def __init__(self, tracer):
        self.tracer = tracer
        self.places = _places()

    def __enter__(self):
        self.saved = []
        for owner, key in self.places:
            rng = _get(owner, key)
            self.saved.append(rng)
            _set(owner, key, _Generator(rng, self.tracer))
        return self

    def __exit__(self, *exc):
        for (owner, key), rng in zip(self.places, self.saved, strict=True):
            current = _get(owner, key)
            if isinstance(current, _Generator):
                _set(owner, key, rng)
            elif not any(b.what == "seed" for b in self.tracer.graph.breaks):
                self.tracer.unsplittable("seed", self.tracer.definition)  # reseeded inside
        return False


def _get(owner, key):
    return owner[key] if isinstance(owner, list) else getattr(owner, key)


def _set(owner, key, value):
    if isinstance(owner, list):
        owner[key] = value
    else:
        setattr(owner, key, value)


class _Generator:
    """A random generator that tells the tracer about draws it did not expect."""

    def __init__(self, rng, tracer):
        self._rng = rng
        self._tracer = tracer

    def __getattr__(self, name):
        attr = getattr(self._rng, name)
        tracer = self._tracer
        if callable(attr) and not tracer.drawing and threading.get_ident() == tracer.thread \
                and STATE.tracing is tracer:
            tracer.unsplittable("random", user_line())
        return attr
