"""`python -m approx_dialect` prints docs/transformations.md (the transform table);
`python -m approx_dialect settings` the component ops' settings table of docs/components.md."""

import sys

from approx_dialect.docs import markdown_table, settings_table

if sys.argv[1:] == ["settings"]:
    print("\n".join(settings_table()))
else:
    print(markdown_table(), end="")
