"""Optional imports the libraries of a CLI run make at their own import and the CLI never uses, left out.

The Neo4j driver imports pandas and pyarrow when they are installed (only for `Result.to_df` and Arrow
vectors: about 0.3 s of every command that reads the graph); nltk imports scipy.stats (for collocation
measures and alignment: about 0.5 s of an offline query). Both import them inside `try ... except
ImportError`, so while that one package is imported the modules are hidden and the package takes them for
not installed; afterwards they import as usual. Only the `driftrag` command does this: a notebook or a
script that imports driftrag gets the libraries as they are.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

# package -> the optional modules its import leaves out. None of them is used through that package.
HIDDEN: dict[str, tuple[str, ...]] = {"neo4j": ("pandas", "pyarrow"), "nltk": ("scipy",)}


class _HidingLoader(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, hidden: tuple[str, ...]) -> None:
        self._loader = loader
        self._hidden = hidden

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # A None entry makes `import pandas` raise ImportError; one already imported stays as it is.
        hidden = [name for name in self._hidden if name not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]
        try:
            self._loader.exec_module(module)
        finally:
            for name in hidden:
                if sys.modules.get(name, ...) is None:
                    del sys.modules[name]
            module.__loader__ = self._loader  # the package keeps its own loader (resources, reloads)
            if module.__spec__ is not None:
                module.__spec__.loader = self._loader


class _LeanFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        hidden = HIDDEN.get(fullname)
        if hidden is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _HidingLoader(spec.loader, hidden)
        return spec


def install() -> None:
    """Leave the `HIDDEN` modules out of the packages imported from now on in this process (once)."""
    if not any(isinstance(finder, _LeanFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _LeanFinder())
