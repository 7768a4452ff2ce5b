"""Filters: one typed filter tree (:mod:`.tree`) with one operator table, and the translators
of every front-end's filters into it.

* :mod:`.dnf`: what users pass as ``filter=`` (DNF tuples, the text filter language, a JSON
  tree, a tree node);
* :mod:`.substrait`: a :class:`pyarrow.compute.Expression` (DuckDB and pyarrow datasets);
* :mod:`.polars_plan`: a polars predicate;
* :mod:`.spark_filters`: Spark's data source filters;
* :mod:`.sql`: SQL expression text of row-level changes (its simple conjuncts as a tree, and
  the whole expression as a pyarrow Expression);
* :mod:`.arrow`: a tree as a pyarrow Expression, to evaluate it on rows.

The tree is handed to the engine as JSON (:func:`~.tree.filter_json`), which binds, evaluates
and prunes with it. This package imports nothing of tidelake but its exceptions and the
engine's text filter parser; front-ends import it, never each other.
"""

from .dnf import parse_filter_text, to_filter
from .tree import (
    And,
    Between,
    Compare,
    Comparison,
    Filter,
    InList,
    IsNull,
    Or,
    StartsWith,
    all_of,
    any_of,
    filter_json,
    from_json,
    json_literal,
    literal_fits,
    to_json,
)

__all__ = ["And", "Between", "Compare", "Comparison", "Filter", "InList", "IsNull", "Or", "StartsWith", "all_of",
           "any_of", "filter_json", "from_json", "json_literal", "literal_fits", "parse_filter_text", "to_filter",
           "to_json"]
