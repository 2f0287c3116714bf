"""A faster ``__init__`` for frozen dataclasses: the engine's, the match's and the server's
hottest ones.

The ``__init__`` that :func:`dataclasses.dataclass` writes for a frozen class sets each field
through ``object.__setattr__(self, name, value)``, which looks the attribute up by name every
time; building events, views and the records of a commit is a visible share of a move's time.
:func:`fast_init` replaces it with one of the same signature (keyword names, defaults) that
stores each value through the attribute's own descriptor: a slot of a slotted class, or the
native attribute of a class that the compiled build compiles (mypyc keeps a dataclass's
``__init__`` as the Python that :mod:`dataclasses` writes, and calls it for every instance its
compiled code builds). Instances are the same: still frozen (assignment raises), equal,
hashable, ``dataclasses.replace``-able.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


_UNSET: Any = object()
"""The default of a field with a default factory (as ``dataclasses`` does it)."""


def fast_init(cls: type[T]) -> type[T]:
    """Give the frozen dataclass ``cls`` (slotted, or compiled: each field a data descriptor
    of the class) a faster ``__init__`` (same signature)."""
    klass: Any = cls  # its dataclass attributes are set at run time
    params = dataclasses.fields(klass)
    assert klass.__dataclass_params__.frozen
    assert not hasattr(cls, "__post_init__")
    env: dict[str, Any] = {"_UNSET": _UNSET}
    args: list[str] = []
    body: list[str] = []
    kw_only = False
    for f in params:
        if not f.init:  # pragma: no cover - the engine's classes have none
            raise TypeError(f"{cls.__name__}.{f.name}: fast_init needs init fields only")
        if f.kw_only and not kw_only:
            args.append("*")
            kw_only = True
        env[f"_s_{f.name}"] = _setter(klass, f.name)
        if f.default is not dataclasses.MISSING:
            env[f"_d_{f.name}"] = f.default
            args.append(f"{f.name}=_d_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:  # a new value per instance left without one
            env[f"_f_{f.name}"] = f.default_factory
            args.append(f"{f.name}=_UNSET")
            body.append(f"    if {f.name} is _UNSET: {f.name} = _f_{f.name}()")
        else:
            args.append(f.name)
        body.append(f"    _s_{f.name}(self, {f.name})")
    src = f"def __init__(self, {', '.join(args)}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(src, env)
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = klass.__init__.__doc__
    klass.__init__ = init
    return cls


def _setter(cls: Any, name: str) -> Any:
    """The function that stores attribute ``name`` of a ``cls`` past its frozen
    ``__setattr__``: its descriptor's ``__set__`` (a slot's member or a compiled class's
    attribute)."""
    descriptor = cls.__dict__.get(name)
    setter = getattr(type(descriptor), "__set__", None)
    if setter is None:
        raise TypeError(f"{cls.__name__}.{name}: fast_init needs a slotted or compiled class")
    return descriptor.__set__


def positional_new(cls: type[T]) -> Any:
    """A function building a ``cls`` from its field values in declaration order (positional:
    no keyword handling), for the engine's hottest constructions. Same instance as
    ``cls(**fields)``."""
    klass: Any = cls
    names = [f.name for f in dataclasses.fields(klass)]
    env: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    body = ["    self = _new(_cls)"]
    for name in names:
        env[f"_s_{name}"] = _setter(klass, name)
        body.append(f"    _s_{name}(self, {name})")
    body.append("    return self")
    src = f"def new({', '.join(names)}):\n" + "\n".join(body) + "\n"
    exec(src, env)
    fn = env["new"]
    fn.__qualname__ = f"{cls.__qualname__}.new"
    return fn
