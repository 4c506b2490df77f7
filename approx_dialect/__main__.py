"""`python -m approx_dialect` prints docs/transformations.md (the transform table)."""

from approx_dialect.docs import markdown_table

print(markdown_table(), end="")
