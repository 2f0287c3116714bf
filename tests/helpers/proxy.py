"""A stand-in for an object the code under test holds, for watching or changing one of its
methods without assigning to the object itself."""

from __future__ import annotations

from typing import Any


class Proxy:
    """``inner``, but for the attributes given as keywords: every other attribute is read from
    ``inner``. A test puts it where the code under test keeps ``inner`` (an attribute such as
    ``MatchService.log``), and its own function answers for the one method it watches. The
    methods of a class compiled with mypyc cannot be replaced on its instances; its
    collaborators, held in attributes, can be."""

    def __init__(self, inner: object, **instead: Any) -> None:
        self.__dict__.update(instead, _inner=inner)

    def __getattr__(self, name: str) -> Any:  # what was not given
        return getattr(self.__dict__["_inner"], name)

    def __repr__(self) -> str:
        return f"Proxy({self.__dict__['_inner']!r})"
