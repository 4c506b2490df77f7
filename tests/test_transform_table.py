"""One table of transformations: the dialect's list, the passes' rewrites and the
documentation agree."""

from pathlib import Path

from approx_dialect.docs import markdown_table
from approx_dialect.transform_types import TRANSFORM_TYPES
from passes.transformations import REWRITES

DOC = Path(__file__).resolve().parents[1] / "docs" / "transformations.md"


def test_every_transform_type_has_a_rewrite_and_vice_versa():
    assert set(TRANSFORM_TYPES) == set(REWRITES)


def test_docs_table_is_generated_from_the_definitions():
    assert DOC.read_text() == markdown_table(), "run: python -m approx_dialect > docs/transformations.md"


def test_component_transforms_are_known_transform_types():
    from approx_dialect.component_knobs import COMPONENT_TRANSFORMS

    assert set(COMPONENT_TRANSFORMS) <= set(TRANSFORM_TYPES)
