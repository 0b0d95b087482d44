"""A :class:`~gear_agent.filters.Where` as one SQL query over the embedded store's indexes.

``source``, ``title`` and ``id`` are indexed columns of ``passages``; a metadata key is a
lookup in ``passage_meta(key, value, row)`` (indexed on ``(key, value)``). ``source=X``
matches ``X`` and the range ``X/`` .. ``X0`` (``0`` sorts right after ``/``), so it reads
the index instead of scanning. Comparisons keep to one kind of value (``typeof``), as
:meth:`Where.matches` does.
"""

from __future__ import annotations

from typing import Any

from gear_agent.filters import Condition, Where

_SQL_OPS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _kind_test(column: str, value: Any) -> str:
    if isinstance(value, bool):
        return f"typeof({column}) = 'integer'"
    if isinstance(value, int | float):
        return f"typeof({column}) IN ('integer', 'real')"
    return f"typeof({column}) = 'text'"


def _sql_value(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value


def _field_eq(condition: Condition, value: Any, params: list[Any]) -> str:
    column = condition.key
    if value is None:
        return "0"
    if column == "source":
        base = value.rstrip("/") or value
        params.extend([base, base + "/", base + "0"])
        return "(source = ? OR (source >= ? AND source < ?))"
    params.append(value)
    return f"{column} = ?"


def _meta_eq(condition: Condition, value: Any, params: list[Any]) -> str:
    if value is None:
        params.append(condition.key)
        return "row IN (SELECT row FROM passage_meta WHERE key = ? AND value IS NULL)"
    params.extend([condition.key, _sql_value(value)])
    return f"row IN (SELECT row FROM passage_meta WHERE key = ? AND value = ? AND {_kind_test('value', value)})"


def _condition_sql(condition: Condition, params: list[Any]) -> str:
    op = condition.op
    eq = _field_eq if condition.is_field else _meta_eq
    if op in ("eq", "in", "ne", "nin"):
        parts = [eq(condition, v, params) for v in condition.values()]
        matched = "(" + " OR ".join(parts) + ")"
        return matched if op in ("eq", "in") else f"NOT {matched}"
    symbol, value = _SQL_OPS[op], condition.value
    if condition.is_field:
        if not isinstance(value, str):
            return "0"  # source, title and id are strings
        params.append(value)
        return f"{condition.key} {symbol} ?"
    params.extend([condition.key, value])
    return (
        f"row IN (SELECT row FROM passage_meta WHERE key = ? AND value {symbol} ? "
        f"AND {_kind_test('value', value)})"
    )


def where_sql(where: Where) -> tuple[str, list[Any]]:
    """``SELECT row FROM passages WHERE ...`` for ``where``, and its parameters, rows ascending.

    Example:
        >>> from gear_agent.filters import parse_where
        >>> sql, params = where_sql(parse_where({"year": {"$gte": 2020}}))
        >>> params
        ['year', 2020]
    """
    params: list[Any] = []
    clauses = [_condition_sql(c, params) for c in where.conditions] or ["1"]
    return "SELECT row FROM passages WHERE " + " AND ".join(clauses) + " ORDER BY row", params
