"""Reading YAML and JSON that people hand us, with the limits a long-running tool needs.

Configuration files and manifests both come through here. What it adds to PyYAML's safe loader:

- a key repeated in one mapping is an error (kube's strict decoding refuses it; PyYAML would keep
  the last value silently);
- timestamps stay strings, as they are in the Kubernetes API (`creationTimestamp`);
- aliases may not expand a document by more than MAX_ALIAS_EXPANSION nodes, and a document may not
  nest deeper than MAX_DEPTH: a "billion laughs" document is a few hundred bytes that expand to
  gigabytes once anything walks it (hashing a pod template, say), and deep nesting exhausts the
  recursion of every later walk. Real manifests nest about twenty levels deep and rarely use
  aliases at all;
- recursive aliases (an anchor used inside itself) are refused.

Errors are YamlError with the 1-based document, line and column where known; callers put the
file name in front in their own format.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import Any

import yaml

__all__ = ["MAX_ALIAS_EXPANSION", "MAX_DEPTH", "InputFileError", "YamlError", "load_all", "load_json", "load_one", "read_text"]

# Nodes that aliases may add to one document beyond the nodes written in it.
MAX_ALIAS_EXPANSION = 1_000_000
# Nesting depth of mappings and sequences in one document.
MAX_DEPTH = 100

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlError(ValueError):
    """A document that cannot be read; `problem` says why, `line`/`column` (1-based) where."""

    def __init__(self, problem: str, line: int | None = None, column: int | None = None, document: int | None = None):
        self.problem = problem
        self.line = line
        self.column = column
        self.document = document
        super().__init__(self.located())

    def located(self, sep: str = ", ") -> str:
        """`line L, column C: problem` (or just the problem when the place is unknown)."""
        if self.line is None:
            return self.problem
        return f"line {self.line}{sep}column {self.column}: {self.problem}"


class InputFileError(ValueError):
    """A file that cannot be read as text; the message says why, without the file's name
    (callers put it in front in their own format)."""


def read_text(path: Path, limit: int, what: str) -> str:
    """The UTF-8 text of a file of at most `limit` bytes (`what` names the kind of file in the
    message). At most one byte past the limit is read, so /dev/zero or a huge file cannot fill
    memory before it is refused."""
    try:
        with path.open("rb") as f:
            raw = f.read(limit + 1)
    except FileNotFoundError:
        raise InputFileError("no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"is a directory, not a {what}") from None
    except OSError as exc:
        raise InputFileError(f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise InputFileError(f"larger than {limit // 2**20} MiB, the limit for a {what}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


class _Loader(_Base):  # type: ignore[misc,valid-type]
    """Safe loader with the checks above; a subclass of (C)SafeLoader, so no arbitrary objects.

    Documents are composed here, from the parser's events, without recursion: libyaml's own
    composer recurses in C (a few hundred thousand `[` crash the process) and its scanner slows
    down with every open flow level, so depth is cut off at MAX_DEPTH as the events arrive.
    """

    def check_node(self) -> bool:
        if self.check_event(yaml.StreamStartEvent):
            self.get_event()
        return not self.check_event(yaml.StreamEndEvent)

    def get_node(self) -> yaml.Node | None:
        if self.check_event(yaml.StreamEndEvent):
            return None
        self.get_event()  # DocumentStart
        node = self._compose()
        self.get_event()  # DocumentEnd
        return node

    def _compose(self) -> yaml.Node:
        anchors: dict[str, yaml.Node] = {}
        # Open collections, each with the key waiting for its value (mappings only).
        open_: list[tuple[yaml.Node, list[yaml.Node]]] = []
        while True:
            # Any: the stubs type marks as Optional and as two classes (C and Python parsers).
            event: Any = self.get_event()
            start: Any = event.start_mark
            end: Any = event.end_mark
            node: yaml.Node
            if isinstance(event, yaml.AliasEvent):
                if event.anchor not in anchors:
                    raise YamlError(f"found undefined alias {_short(event.anchor)}", start.line + 1, start.column + 1)
                node = anchors[event.anchor]
            elif isinstance(event, yaml.ScalarEvent):
                tag = event.tag
                if tag is None or tag == "!":
                    tag = self.resolve(yaml.ScalarNode, event.value, event.implicit)
                node = yaml.ScalarNode(tag, event.value, start, end, style=event.style)
                if event.anchor is not None:
                    anchors[event.anchor] = node
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                if len(open_) >= MAX_DEPTH:
                    raise YamlError(f"nesting deeper than {MAX_DEPTH} levels", start.line + 1, start.column + 1)
                kind = yaml.SequenceNode if isinstance(event, yaml.SequenceStartEvent) else yaml.MappingNode
                tag = event.tag
                if tag is None or tag == "!":
                    tag = self.resolve(kind, None, event.implicit)
                node = kind(tag, [], start, None, flow_style=event.flow_style)
                if event.anchor is not None:
                    anchors[event.anchor] = node
                open_.append((node, []))
                continue
            else:  # SequenceEnd / MappingEnd
                node, _ = open_.pop()
                node.end_mark = end
            if not open_:
                return node
            parent, pending = open_[-1]
            if isinstance(parent, yaml.SequenceNode):
                parent.value.append(node)
            elif pending:
                parent.value.append((pending.pop(), node))
            else:
                pending.append(node)

    def construct_document(self, node: yaml.Node) -> Any:
        _check_shape(node)
        return super().construct_document(node)

    def construct_go_float(self, node: yaml.ScalarNode) -> float | str:
        """A float as go-yaml reads one: a number too large for a float64 (`1e1000000`) stays
        the string it was written as, instead of becoming infinity."""
        value: float = self.construct_yaml_float(node)
        if math.isinf(value) and "inf" not in str(node.value).lower():
            return str(node.value)
        return value

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        if _plain_keys_unique(node):
            return super().construct_mapping(node, deep)
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable):
                if key in seen:
                    mark = key_node.start_mark
                    raise YamlError(f"duplicate key {_short(key)}", mark.line + 1, mark.column + 1)
                seen.add(key)
        return super().construct_mapping(node, deep)


# Plain scalars resolve as kube's YAML library (go-yaml) resolves them, not as YAML 1.1 says:
# `1e3` and `1.5e3` are numbers there (YAML 1.1 wants a dot and a signed exponent), `1:30` is a
# string (YAML 1.1 reads base 60), and timestamps stay strings, as they are in the API.
_FLOAT = re.compile(
    r"^(?:[-+]?(?:[0-9][0-9_]*\.[0-9_]*|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_INT = re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$")
_REPLACED = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:float", "tag:yaml.org,2002:int"}
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _REPLACED]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_go_float)
# Ints before floats: both patterns are tried in order, and `1_000` must stay an int.
for _tag, _rx, _firsts in (("tag:yaml.org,2002:int", _INT, "-+0123456789"), ("tag:yaml.org,2002:float", _FLOAT, "-+0123456789.")):
    for _first in _firsts:
        _Loader.yaml_implicit_resolvers.setdefault(_first, []).append((_tag, _rx))


def _plain_keys_unique(node: yaml.MappingNode) -> bool:
    """The common case, decided without constructing the keys: every key a plain string, none twice."""
    keys = []
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
            return False
        keys.append(key_node.value)
    return len(set(keys)) == len(keys)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _check_shape(root: yaml.Node) -> None:
    """Refuse excessive alias expansion, recursive aliases and excessive depth, without recursion.

    Size and height are memoized per node object: an alias is the same node object as its anchor,
    so the walk is linear in the distinct nodes while the sizes count what a consumer would walk.
    """
    size: dict[int, int] = {}
    height: dict[int, int] = {}
    open_nodes: set[int] = set()
    # (node, depth, children done?)
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            children = _children(node)
            size[key] = 1 + sum(size[id(child)] for child in children)
            height[key] = 1 + max(height[id(child)] for child in children)
            continue
        if key in size:  # seen before, through an anchor or an alias: maybe deeper this time
            if depth + height[key] - 1 > MAX_DEPTH:
                raise _shape_error(node, f"nesting deeper than {MAX_DEPTH} levels")
            continue
        if key in open_nodes:
            raise _shape_error(node, "recursive alias: an anchor is used inside itself")
        if depth > MAX_DEPTH:
            raise _shape_error(node, f"nesting deeper than {MAX_DEPTH} levels")
        children = _children(node)
        if not children:
            size[key] = height[key] = 1
            continue
        open_nodes.add(key)
        stack.append((node, depth, True))
        stack.extend((child, depth + 1, False) for child in children)
    expansion = size[id(root)] - len(size)
    if expansion > MAX_ALIAS_EXPANSION:
        raise YamlError(f"aliases expand this document by {expansion} nodes, more than the limit of {MAX_ALIAS_EXPANSION}")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _shape_error(node: yaml.Node, problem: str) -> YamlError:
    mark = node.start_mark
    return YamlError(problem, mark.line + 1, mark.column + 1)


def _syntax_error(exc: yaml.YAMLError) -> YamlError:
    if isinstance(exc, yaml.reader.ReaderError):
        char = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        return YamlError(f"invalid YAML: unacceptable character #x{char:04x} at character {exc.position}: {exc.reason}")
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    context = getattr(exc, "context", None)
    if context and problem.startswith("but "):
        problem = f"{context}, {problem}"
    problem = str(problem).splitlines()[0] if str(problem).strip() else "syntax error"
    if "maximum nesting depth" in problem:
        # libyaml (0.2.6+, under PyYAML 6.0.3+) stops deep nesting itself, scanning ahead of the
        # events that would have met our own limit: the same refusal, in our words.
        located = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
        return YamlError(f"nesting deeper than {MAX_DEPTH} levels", *located)
    if mark is None:
        return YamlError(f"invalid YAML: {problem}")
    return YamlError(f"invalid YAML: {problem}", mark.line + 1, mark.column + 1)


def load_all(text: str) -> Iterator[tuple[int, Any]]:
    """(1-based index, data) of each document of a YAML stream; YamlError names the document."""
    loader = _Loader(text)
    try:
        index = 0
        while True:
            data, more = _next_document(loader, index + 1)
            if not more:
                return
            index += 1
            yield index, data
    finally:
        loader.dispose()


def _next_document(loader: _Loader, document: int) -> tuple[Any, bool]:
    try:
        if not loader.check_data():
            return None, False
        return loader.get_data(), True
    except YamlError as exc:
        exc.document = document
        raise
    except yaml.YAMLError as exc:
        err = _syntax_error(exc)
        err.document = document
        raise err from None
    except RecursionError:
        raise YamlError(f"nesting deeper than {MAX_DEPTH} levels", document=document) from None


def load_one(text: str) -> Any:
    """The single document of a YAML text (None if empty); a second document is an error."""
    first: Any = None
    for index, data in load_all(text):
        if index > 1:
            raise YamlError("expected a single document, found a second one (---)", document=index)
        first = data
    return first


def load_json(text: str) -> Any:
    """JSON with the same rules: duplicate keys and excessive depth are errors."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise YamlError(f"duplicate key {_short(key)}")
            out[key] = value
        return out

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise YamlError(f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:
        raise YamlError(f"nesting deeper than {MAX_DEPTH} levels") from None
    _check_json_depth(data)
    return data


def _check_json_depth(data: Any) -> None:
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise YamlError(f"nesting deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
