"""gluon `Block` and `HybridBlock`, as MXNet 1.x has them.

A Block registers child Blocks and Parameters by attribute, names them with prefixes
(`dense0_weight`, inside `name_scope()` under the parent's prefix), collects them with
`collect_params(select)`, initialises them (deferred until the first forward when a shape is
unknown) and saves them by their structural names (`0.weight`). A HybridBlock's forward calls
`hybrid_forward(F, x, ..., **params)` with F = mx.nd; `hybridize()` makes it run as one compiled
graph (kit.compile: traced once per input signature, replayed, elementwise runs fused).

>>> import kit.mx as mx
>>> from kit.mx.gluon import nn
>>> net = nn.Sequential()
>>> net.add(nn.Dense(3, in_units=2)); net.initialize()
>>> net(mx.nd.ones((4, 2))).shape
(4, 3)
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

from kit._tensor import Tensor
from kit.compiler import compile as compile_graph
from kit.mx import nd
from kit.mx.gluon.parameter import DeferredInitializationError, Parameter
from kit.mx.gluon.parameter_dict import ParameterDict, load_arrays, match_names, save_arrays
from kit.mx.gluon.parameter_dict import select as select_params
from kit.mx.ndarray import NDArray

_GLOBAL_COUNTS = {}  # hint -> next number, for blocks made outside any name_scope


class _NameScope:
    """The naming scope a Block opens with `with self.name_scope():` (MXNet's _BlockScope)."""

    _current = None

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old = None

    @staticmethod
    def create(prefix, params, hint):
        """(prefix, ParameterDict) for a new Block, from the scope it is created in."""
        current = _NameScope._current
        if current is None:
            if prefix is None:
                count = _GLOBAL_COUNTS.get(hint, 0)
                _GLOBAL_COUNTS[hint] = count + 1
                prefix = f"{hint}{count}_"
            shared = ParameterDict(prefix) if params is None else ParameterDict(
                params.prefix, params)
            return prefix, shared
        if prefix is None:
            count = current._counter.get(hint, 0)
            current._counter[hint] = count + 1
            prefix = f"{hint}{count}_"
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old, _NameScope._current = _NameScope._current, self
        return self

    def __exit__(self, *exc):
        if not self._block._empty_prefix:
            _NameScope._current = self._old
        return False


class HookHandle:
    """What register_forward_hook returns: `detach()` removes the hook."""

    _ids = itertools.count()

    def __init__(self, table, hook):
        self._table = table
        self.id = next(HookHandle._ids)
        table[self.id] = hook

    def detach(self):
        self._table.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()
        return False


def _indent(text, spaces):
    lines = text.split("\n")
    return lines[0] + "".join("\n" + " " * spaces + line for line in lines[1:])


class Block:
    """Base class of every layer and model: subclass it and write `forward`."""

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _NameScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _NameScope(self)
        self._children = OrderedDict()
        self._reg_params = OrderedDict()
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def _alias(self):
        return type(self).__name__.lower()

    def __setattr__(self, name, value):
        if isinstance(value, (Block, Parameter)) and "_children" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {type(value).__name__} '{name}' before Block.__init__() call. "
                f"Fix: call super().__init__(**kwargs) first in {type(self).__name__}.__init__"
            )
        existing = self.__dict__.get(name)
        if isinstance(existing, (Block, Parameter)) and not isinstance(value, type(existing)):
            raise TypeError(
                f"Changing attribute type for {name} from {type(existing)} to {type(value)} "
                f"is not allowed."
            )
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params and self._reg_params[name] is not value:
                raise AssertionError(
                    f"Overriding Parameter attribute {name} is not allowed. If you want to "
                    f"share parameters between blocks, please set 'params' at Block "
                    f"construction instead."
                )
            self._reg_params[name] = value
        object.__setattr__(self, name, value)

    def __repr__(self):
        body = "\n".join(f"  ({key}): {_indent(repr(child), 2)}"
                         for key, child in self._children.items())
        return f"{type(self).__name__}(\n{body}\n)"

    # --- names and parameters -----------------------------------------------------------
    @property
    def prefix(self):
        return self._prefix

    @property
    def name(self):
        return self._name

    @property
    def params(self):
        """This Block's own ParameterDict (not its children's: see collect_params)."""
        return self._params

    def name_scope(self):
        """`with self.name_scope():` children made inside get this Block's prefix."""
        return self._scope

    def register_child(self, block, name=None):
        """Add a child Block (what attribute assignment does); named by position if no name."""
        self._children[str(len(self._children)) if name is None else name] = block

    def collect_params(self, select=None):
        """A ParameterDict of this Block's and all its descendants' Parameters by full name;
        `select` keeps the names a regular expression matches, e.g. '.*weight|.*bias'."""
        out = ParameterDict(self._params.prefix)
        own = OrderedDict(self._params.items())
        own.update((p.name, p) for p in self._reg_params.values())
        out.update(own if not select else select_params(own, select))
        for child in self._children.values():
            out.update(child.collect_params(select))
        return out

    def _collect_params_with_prefix(self, prefix=""):
        if prefix:
            prefix += "."
        out = OrderedDict((prefix + key, p) for key, p in self._reg_params.items())
        for name, child in self._children.items():
            out.update(child._collect_params_with_prefix(prefix + name))
        return out

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialise every Parameter: `init` (mx.init.Uniform() by default, as MXNet) for
        those without their own initializer; unknown shapes wait for the first forward."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def save_parameters(self, filename, deduplicate=False):
        """Save the values by structural name ('0.weight', 'features.1.bias') to `filename`
        (a NumPy .npz archive in kit; MXNet writes its own binary format)."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            seen, unique = set(), OrderedDict()
            for name, p in params.items():
                if id(p) not in seen:
                    seen.add(id(p))
                    unique[name] = p
            params = unique
        save_arrays(filename, {name: p.data().asnumpy() for name, p in params.items()})

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source="current"):
        """Load values saved by save_parameters (uninitialised Parameters are created from the
        file, so a fresh network needs no initialize())."""
        loaded = load_arrays(filename)
        params = self._collect_params_with_prefix()
        if loaded and not any("." in name for name in loaded) and not set(loaded) & set(params):
            # names without the Block's prefix, as collect_params().save(strip_prefix=prefix)
            # writes them (MXNet's legacy format)
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix)
            return
        match_names(loaded, params, filename, allow_missing, ignore_extra)
        for name, values in loaded.items():
            if name in params:
                params[name]._load_init(values, ctx, cast_dtype, dtype_source)

    def cast(self, dtype):
        """Cast every Parameter (and those of the children) to `dtype`."""
        for child in self._children.values():
            child.cast(dtype)
        for param in itertools.chain(self._params.values(), self._reg_params.values()):
            param.cast(dtype)

    def apply(self, fn):
        """Call `fn(block)` on every descendant (children first) and on self; returns self."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def hybridize(self, active=True, **kwargs):
        """Hybridize the HybridBlocks among the children (a plain Block itself runs Python)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    # --- calling ------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook):
        """`hook(block, inputs)` runs before forward."""
        return HookHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook):
        """`hook(block, inputs, output)` runs after forward."""
        return HookHandle(self._forward_hooks, hook)

    def __call__(self, *args):
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                hook(self, args)
        out = self._run_forward(*args)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                hook(self, args, out)
        return out

    def _run_forward(self, *args):
        return self.forward(*args)

    def forward(self, *args):
        raise NotImplementedError(
            f"Block [{type(self).__name__}] must define forward(self, x, ...) (a HybridBlock "
            f"defines hybrid_forward(self, F, x, ...) instead)"
        )


class HybridBlock(Block):
    """A Block written with `hybrid_forward(F, x, *args, **params)`; its registered
    Parameters arrive as keyword arguments (their data), F is mx.nd."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix, params)
        self._active = False
        self._graph = self._graph_params = None

    def hybridize(self, active=True, static_alloc=False, static_shape=False, **kwargs):
        """From the next call, run this block as one compiled graph (kit.compile): its forward,
        children included, is traced once per input signature and replayed, elementwise runs
        fused (`self._graph.explain()` shows what was captured). As in MXNet, Python in
        hybrid_forward then runs only while tracing. `static_alloc` and `static_shape` are
        accepted for MXNet code: kit's graphs always reuse their buffers and are specialised to
        their input shapes."""
        self._active = active
        self._graph = compile_graph(self._traced_forward) if active else None
        # NOTE: collected once (collect_params builds a ParameterDict: ~50 us a call)
        self._graph_params = list(self.collect_params().values()) if active else None
        super().hybridize(active, static_alloc=static_alloc, static_shape=static_shape, **kwargs)

    def _run_forward(self, *args):
        if self._graph is not None:
            tensors = [a._t if isinstance(a, NDArray) else a for a in args]
            for p in self._graph_params:
                v = p._var
                if v is None:  # first call, deferred init: eagerly
                    return self.forward(*args)
                tensors.append(v._t)
            # NOTE: one flat list of tensors, compiled's fast path (no nesting to walk)
            return _as_ndarrays(self._graph(*tensors))
        return self.forward(*args)

    def _traced_forward(self, *tensors):
        """What hybridize compiles: the forward on Tensors, given the inputs then the
        Parameters' tensors (passed in, so that a replay reads whichever arrays they hold)."""
        inputs = tensors[:len(tensors) - len(self._graph_params)]
        args = [NDArray(t) if isinstance(t, Tensor) else t for t in inputs]
        return _as_tensors(self.forward(*args))

    def forward(self, x, *args):
        params = {}
        for name, p in self._reg_params.items():
            if p._var is None:  # not initialised, or waiting for its shape
                return self._first_forward(x, *args)
            params[name] = p._var
        return self.hybrid_forward(nd, x, *args, **params)

    def _first_forward(self, x, *args):
        try:
            params = {name: p.data() for name, p in self._reg_params.items()}
        except DeferredInitializationError:
            self.infer_shape(x, *args)
            for p in self._reg_params.values():
                p._finish_deferred_init()
            params = {name: p.data() for name, p in self._reg_params.items()}
        return self.hybrid_forward(nd, x, *args, **params)

    def infer_shape(self, *args):
        """Fill in the unknown dimensions of the Parameters' shapes from the inputs.

        The built-in layers know their rule; MXNet infers any block's shapes symbolically,
        which kit (running eagerly) cannot.
        """
        unknown = [p.name for p in self._reg_params.values() if p._var is None]
        raise DeferredInitializationError(
            f"{type(self).__name__}: kit.mx cannot infer the shapes of {unknown} from the "
            f"inputs (MXNet does it symbolically; kit runs eagerly). Fix: give these Parameters "
            f"their full shapes, or define infer_shape(self, x) setting param.shape"
        )

    def hybrid_forward(self, F, x, *args, **kwargs):  # noqa: N803 - MXNet's name
        raise NotImplementedError(
            f"HybridBlock [{type(self).__name__}] must define hybrid_forward(self, F, x, ...)"
        )

    def export(self, path, epoch=0):
        raise NotImplementedError(
            "HybridBlock.export writes a symbol graph (-symbol.json), and kit.mx has no symbolic "
            "API. Fix: net.save_parameters(path), and rebuild the network in Python to load it"
        )


def _as_tensors(out):
    if isinstance(out, (tuple, list)):
        return type(out)(_as_tensors(o) for o in out)
    return out._t if isinstance(out, NDArray) else out


def _as_ndarrays(out):
    if isinstance(out, (tuple, list)):
        return type(out)(_as_ndarrays(o) for o in out)
    return NDArray(out) if isinstance(out, Tensor) else out
