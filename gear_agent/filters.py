"""Filters over passages: one typed :class:`Where` from the CLI form or a Python dict.

Two ways in, one result:

* the command line's ``["source=reports/2024", "year>=2020"]``: ``KEY OP VALUE`` with the
  operators ``=``, ``!=``, ``>``, ``>=``, ``<``, ``<=``; the value is read as a JSON scalar
  when it parses as one (``2020``, ``true``, ``"2020"``), else as the plain string;
* a Python dict in the Mongo style, ``{"source": "reports/2024", "year": {"$gte": 2020}}``,
  with ``$eq $ne $gt $gte $lt $lte $in $nin``; a plain value means ``$eq``.

Every condition must hold (AND). Keys are ``source``, ``title``, ``id`` or a metadata key
(a dotted path such as ``author.name`` reaches into nested metadata). ``source`` with ``=``
(or ``$in``) matches that exact source or anything under it as a path: ``reports/2024``
matches ``reports/2024/q1.md``. A metadata key holding a list matches when any element
does. Values compare within their kind: numbers with numbers, strings with strings; a
``>`` between a number and a string matches nothing. ``!=`` and ``$nin`` also match
passages that lack the key. Bad filters raise :class:`FilterError` naming the bad part.

Stores apply a :class:`Where` before ranking (see ``Collection.bm25_search``); :meth:`Where.matches`
is the reference semantics in plain Python.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gear_agent.errors import GearError

Op = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"]
Scalar = str | int | float | bool | None

FIELDS = ("source", "title", "id")
"""Keys that name a passage's own fields; every other key is a metadata key."""

OPS: tuple[Op, ...] = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin")
_CLI_OPS: dict[str, Op] = {">=": "gte", "<=": "lte", "!=": "ne", "=": "eq", ">": "gt", "<": "lt"}
_CLI_OP = re.compile(r"(>=|<=|!=|=|>|<)")
_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
MAX_VALUES = 1024

WhereInput = Mapping[str, Any] | Iterable[str] | str
"""A filter as users write it: a Mongo-style dict, CLI ``KEY OP VALUE`` strings, or one such string."""


class FilterError(GearError, ValueError):
    """A filter cannot be read; the message names the bad part and the expected form."""


@dataclass(frozen=True)
class Condition:
    """One test on one key: ``key op value`` (``value`` is a tuple for ``in``/``nin``)."""

    key: str
    op: Op
    value: Any

    @property
    def is_field(self) -> bool:
        """True for ``source``, ``title`` and ``id``; False for a metadata key."""
        return self.key in FIELDS

    def values(self) -> tuple[Scalar, ...]:
        """The value(s) as a tuple: one for the comparison operators."""
        return self.value if self.op in ("in", "nin") else (self.value,)

    def __str__(self) -> str:
        symbol = {v: k for k, v in _CLI_OPS.items()}.get(self.op)
        if symbol:
            return f"{self.key}{symbol}{json.dumps(self.value)}"
        return f"{self.key} ${self.op} {json.dumps(list(self.value))}"


@dataclass(frozen=True)
class Where:
    """All of ``conditions`` must hold. Build one with :func:`parse_where`.

    Example:
        >>> where = parse_where(["source=reports/2024", "year>=2020"])
        >>> where.matches_record("reports/2024/q1.md", "Q1", "p-1", {"year": 2021})
        True
        >>> where.matches_record("reports/2023/q4.md", "Q4", "p-2", {"year": 2021})
        False
    """

    conditions: tuple[Condition, ...]

    def __str__(self) -> str:
        return " AND ".join(str(c) for c in self.conditions) or "(everything)"

    def to_dict(self) -> dict[str, Any]:
        """The dict form (JSON-friendly) that :func:`parse_where` reads back to an equal filter.

        >>> parse_where(["year>=2020", "year<2024"]).to_dict()
        {'year': {'$gte': 2020, '$lt': 2024}}
        >>> parse_where(parse_where(["a>1", "a>2"]).to_dict()) == parse_where(["a>1", "a>2"])
        True
        """
        flat: dict[str, dict[str, Any]] = {}
        for c in self.conditions:
            ops = flat.setdefault(c.key, {})
            if f"${c.op}" in ops:  # the same test twice on one key: keep them apart
                return {"$and": [{c.key: {f"${c.op}": _json_value(c)}} for c in self.conditions]}
            ops[f"${c.op}"] = _json_value(c)
        return dict(flat)

    def matches(self, passage: Any) -> bool:
        """Whether a :class:`~gear_agent.types.Passage` passes every condition."""
        return self.matches_record(passage.source, passage.title, passage.id, passage.metadata)

    def matches_record(
        self, source: str, title: str, pid: str, metadata: Mapping[str, Any] | None
    ) -> bool:
        """Whether a record with these fields passes every condition (the reference semantics)."""
        fields = {"source": source, "title": title, "id": pid}
        for condition in self.conditions:
            if condition.is_field:
                present = [fields[condition.key]]
            else:
                present = list(metadata_values(metadata or {}, condition.key))
            if not _holds(condition, present):
                return False
        return True


def _json_value(condition: Condition) -> Any:
    return list(condition.value) if condition.op in ("in", "nin") else condition.value


def _same_kind(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, int | float) and isinstance(b, int | float):
        return True
    return isinstance(a, str) and isinstance(b, str)


def _equal(condition: Condition, have: Any, want: Any) -> bool:
    if condition.key == "source" and isinstance(have, str) and isinstance(want, str):
        return source_matches(have, want)
    return _same_kind(have, want) and have == want


def _holds(condition: Condition, present: list[Any]) -> bool:
    op = condition.op
    if op in ("eq", "in"):
        return any(_equal(condition, h, w) for h in present for w in condition.values())
    if op in ("ne", "nin"):
        return not any(_equal(condition, h, w) for h in present for w in condition.values())
    want = condition.value
    for have in present:
        if have is None or not _same_kind(have, want):
            continue
        if (op == "gt" and have > want) or (op == "gte" and have >= want) or (
            op == "lt" and have < want
        ) or (op == "lte" and have <= want):
            return True
    return False


def source_matches(source: str, wanted: str) -> bool:
    """``wanted`` is ``source`` itself or a folder above it.

    >>> source_matches("reports/2024/q1.md", "reports/2024"), source_matches("reports/20245", "reports/2024")
    (True, False)
    """
    wanted = wanted.rstrip("/") or wanted
    return source == wanted or source.startswith(wanted + "/")


def metadata_values(metadata: Mapping[str, Any], key: str) -> Iterator[Any]:
    """The scalar values at ``key`` (a dotted path) in ``metadata``; a list gives each element."""
    for path, value in flatten_metadata(metadata):
        if path == key:
            yield value


def flatten_metadata(metadata: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted key, scalar)`` pairs of ``metadata``: nested objects give dotted keys, lists
    one pair per scalar element. This is what stores index for filtering.

    >>> list(flatten_metadata({"year": 2020, "tags": ["a", "b"], "author": {"name": "Ida"}}))
    [('year', 2020), ('tags', 'a'), ('tags', 'b'), ('author.name', 'Ida')]
    """
    for key, value in metadata.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from flatten_metadata(value, path + ".")
        elif isinstance(value, list | tuple):
            for item in value:
                if _is_scalar(item):
                    yield path, item
        elif _is_scalar(value):
            yield path, value


def _is_scalar(value: Any) -> bool:
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return value is None or isinstance(value, str | int | float | bool)


# ---- parsing ---------------------------------------------------------------------------
def _check_key(key: Any, where: str) -> str:
    if not isinstance(key, str) or not _KEY.match(key):
        raise FilterError(
            f"bad filter key {key!r} in {where}: use source, title, id or a metadata key "
            "(letters, digits, _ . -)"
        )
    return key


def _scalar(value: Any, where: str) -> Scalar:
    if not _is_scalar(value):
        raise FilterError(
            f"bad filter value {value!r} in {where}: expected a string, number, true, false or null"
        )
    return value


def _condition(key: str, op: Op, value: Any, where: str) -> Condition:
    if op in ("in", "nin"):
        if not isinstance(value, list | tuple) or not value:
            raise FilterError(f"bad filter {where}: ${op} needs a non-empty list of values")
        if len(value) > MAX_VALUES:
            raise FilterError(f"bad filter {where}: ${op} takes at most {MAX_VALUES} values")
        return Condition(key, op, tuple(_scalar(v, where) for v in value))
    value = _scalar(value, where)
    if op in ("gt", "gte", "lt", "lte") and (value is None or isinstance(value, bool)):
        raise FilterError(f"bad filter {where}: ${op} compares numbers or strings, not {value!r}")
    if key == "source" and op in ("eq", "ne") and not isinstance(value, str):
        raise FilterError(f"bad filter {where}: source is compared with a string")
    return Condition(key, op, value)


def parse_cli(items: Iterable[str]) -> Where:
    """``["source=reports/2024", "year>=2020"]`` -> :class:`Where`.

    Raises:
        FilterError: an item is not ``KEY OP VALUE``, or its key or value is bad.

    Example:
        >>> str(parse_cli(["year>=2020", "lang=en"]))
        'year>=2020 AND lang="en"'
    """
    conditions = []
    for item in items:
        if not isinstance(item, str):
            raise FilterError(f"bad filter {item!r}: expected KEY OP VALUE text, e.g. year>=2020")
        match = _CLI_OP.search(item)
        if match is None or match.start() == 0:
            raise FilterError(
                f"bad filter {item!r}: expected KEY OP VALUE with OP one of = != > >= < <=, "
                "e.g. source=reports/2024 or year>=2020"
            )
        key = _check_key(item[: match.start()].strip(), repr(item))
        raw = item[match.end() :].strip()
        if raw[:1] in ("<", ">", "=", "!"):  # 'year>>2', 'year=>2': a typo, not a value
            raise FilterError(
                f"bad filter {item!r}: the value starts with {raw[0]!r}, so the operator is "
                "unclear; use one of = != > >= < <= (a value that really starts with it: "
                f'quote it as JSON, {key}{match.group()}\'"{raw}"\')'
            )
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        if not _is_scalar(value):
            value = raw
        conditions.append(_condition(key, _CLI_OPS[match.group()], value, repr(item)))
    return Where(tuple(conditions))


def parse_dict(spec: Mapping[str, Any]) -> Where:
    """``{"source": "reports/2024", "year": {"$gte": 2020}}`` -> :class:`Where`.

    Raises:
        FilterError: a key, operator or value is bad.

    Example:
        >>> str(parse_dict({"year": {"$gte": 2020, "$lt": 2024}}))
        'year>=2020 AND year<2024'
    """
    conditions: list[Condition] = []
    for key, value in spec.items():
        if key == "$and":
            if not isinstance(value, list | tuple) or not all(isinstance(v, Mapping) for v in value):
                raise FilterError("bad filter: $and takes a list of filter objects")
            conditions.extend(c for part in value for c in parse_dict(part).conditions)
            continue
        _check_key(key, f"filter {{{key!r}: ...}}")
        if isinstance(value, Mapping):
            if not value:
                raise FilterError(f"bad filter for {key!r}: an empty operator object")
            for op_name, operand in value.items():
                op = op_name[1:] if isinstance(op_name, str) and op_name.startswith("$") else None
                if op not in OPS:
                    raise FilterError(
                        f"bad filter operator {op_name!r} for {key!r}: use one of "
                        + " ".join(f"${o}" for o in OPS)
                    )
                conditions.append(_condition(key, op, operand, f"{{{key!r}: {{{op_name!r}: ...}}}}"))
        elif isinstance(value, list | tuple):
            conditions.append(_condition(key, "in", value, f"{{{key!r}: [...]}}"))
        else:
            conditions.append(_condition(key, "eq", value, f"{{{key!r}: {value!r}}}"))
    return Where(tuple(conditions))


def parse_where(spec: Where | WhereInput | None) -> Where | None:
    """One :class:`Where` from whichever form ``spec`` takes; None (no filter) stays None.

    A string is one CLI item; a list or tuple of strings the CLI form; a mapping the dict
    form; a :class:`Where` is returned as it is. An empty filter is None.

    Raises:
        FilterError: the filter cannot be read.

    Example:
        >>> parse_where({"source": "a.txt"}) == parse_where(["source=a.txt"])
        True
    """
    if spec is None or isinstance(spec, Where):
        return spec if spec is None or spec.conditions else None
    if isinstance(spec, str):
        where = parse_cli([spec])
    elif isinstance(spec, Mapping):
        where = parse_dict(spec)
    elif isinstance(spec, Iterable):
        where = parse_cli(list(spec))
    else:
        raise FilterError(f"bad filter {spec!r}: give a dict, a list of KEY OP VALUE strings or a Where")
    return where if where.conditions else None
