"""MXNet APIs kit.mx does not offer: they exist, and using them says what kit offers instead.

`mx.sym.Variable("x")` raises NotImplementedError naming the alternative, never AttributeError,
so code ported from MXNet fails at its first use of an unsupported API with a way forward.
"""

from __future__ import annotations


class OutOfScope:
    """Stands for an MXNet module, class or function kit.mx does not implement."""

    __slots__ = ("_name", "_instead")

    def __init__(self, name, instead):
        self._name = name
        self._instead = instead

    def _refuse(self, what):
        raise NotImplementedError(
            f"{what} is not part of kit.mx ({self._name} is out of scope). Instead: "
            f"{self._instead}"
        )

    def __getattr__(self, attr):
        if attr.startswith("__"):  # introspection (copy, pickle, inspect): plain Python rules
            raise AttributeError(attr)
        self._refuse(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        self._refuse(f"{self._name}(...)")

    def __repr__(self):
        return f"<{self._name}: not in kit.mx; {self._instead}>"


SYMBOLIC = (
    "write the model imperatively with mx.nd operations inside mx.autograd.record(), or as a "
    "gluon HybridBlock (hybrid_forward(self, F, x) with F = mx.nd; hybridize() is accepted); "
    "symbolic graphs are not built, kit records the imperative graph, which kit.viz can draw"
)
SPARSE = (
    "use dense NDArrays: mx.nd.array(x) or x.tostype('default'); mx.nd.sparse's elementwise "
    "ops and dot accept dense arrays"
)

sym = OutOfScope("mx.sym", SYMBOLIC)
symbol = OutOfScope("mx.symbol", SYMBOLIC)
mod = OutOfScope(
    "mx.mod", "train with mx.autograd.record(), y.backward() and an update of each parameter, "
    "or a gluon Block with gluon.Trainer (trainer.step(batch_size))",
)
io = OutOfScope(
    "mx.io", "iterate over mx.nd arrays yourself, e.g. for i in range(0, n, batch): x[i:i + batch]"
)
kv = OutOfScope("mx.kv", "single-process training needs no key-value store; update parameters "
                "directly")
