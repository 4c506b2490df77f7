"""Variants of a provider by the settings that change its weights (precision, an
early exit's layers): built once, on first use, and kept by the provider they
come from, for every provider of every op (answer models, encoders, scorers).

A provider mixes in `Variants`, lists `precision` (and `layers`, with its `depth`)
in its `supports`, and says how to build one variant (`build_variant`); callers
ask `variant(precision, layers)` (None: the provider's own)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from approx_dialect.diagnostics import ApproxError
from approx_dialect.precision import FLOATS, check_backend


class Variants:
    """A variant cache keyed by (precision, layers); the provider it is mixed into
    is the (float32, every layer) variant."""

    name: str
    supports: frozenset[str]
    precision: str = "float32"
    layers: int | None = None  # None: every layer
    depth: int | None = None  # the layers an early exit may keep (1..depth)
    precisions: frozenset[str] = FLOATS  # the precision values it builds (weight-only int8 where listed)
    missing: dict[str, str] = {}  # precision value -> why it has no variant of it (the error says so)

    def build_variant(self, precision: str, layers: int | None) -> Any:
        """A new provider computing in `precision` with its first `layers` layers
        (None: all), sharing what it can with this one (the root)."""
        raise NotImplementedError

    def variant(self, precision: str | None = None, layers: int | None = None) -> Any:
        root = self.__dict__.get("_variant_root", self)
        precision = precision or root.precision
        if precision != root.precision:
            if "precision" not in self.supports:
                raise ApproxError(f"'{root.name}' has no precision variants", where=root.name)
            check_backend(precision, root.name)
            if precision not in root.precisions:
                has = ", ".join(sorted(root.precisions))
                why = f": {root.missing[precision]}" if precision in root.missing else ""
                raise ApproxError(f"'{root.name}' has no {precision} variant (it has {has}){why}", where=root.name)
        if layers is not None:
            if "layers" not in self.supports or root.depth is None:
                raise ApproxError(f"'{root.name}' has no early exit (layers)", where=root.name)
            if isinstance(layers, bool) or not isinstance(layers, int) or not 1 <= layers <= root.depth:
                raise ApproxError(f"early exit needs a depth in 1..{root.depth}, got {layers!r}", where=root.name)
            layers = None if layers == root.depth else layers
        if (precision, layers) == (root.precision, None):
            return root

        def build() -> Any:
            other = root.build_variant(precision, layers)
            other.precision, other.layers = precision, layers
            suffix = [precision] if precision != root.precision else []
            suffix += [f"{layers} layers"] if layers is not None else []
            other.name = f"{root.name}[{', '.join(suffix)}]"
            return other

        return self.built_variant((precision, layers), build)

    def built_variant(self, key: tuple, build: Callable[[], Any]) -> Any:
        """The variant that the settings `key` select, made by `build` on first use and
        kept by the root provider: one cache for every kind of variant (a provider's
        own settings, such as a per-token exit, extend the (precision, layers) key)."""
        root = self.__dict__.get("_variant_root", self)
        built = root.__dict__.setdefault("_variants_built", {})
        if key not in built:
            other = build()
            other._variant_root = root
            built[key] = other
        return built[key]

    def variant_for(self, settings) -> Any:
        """The variant an op's settings select (their `precision` and `layers`)."""
        return self.variant(getattr(settings, "precision", None), getattr(settings, "layers", None))

    def with_precision(self, precision: str) -> Any:
        return self.variant(precision, self.layers)

    def with_layers(self, layers: int) -> Any:
        return self.variant(self.precision, layers)
