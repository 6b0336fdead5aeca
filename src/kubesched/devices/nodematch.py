"""Whether a ResourceSlice (or one of its devices, with perDeviceNodeSelection) is available on a
node: kube's NodeMatches in k8s.io/dynamic-resource-allocation/structured (incubating), which
reads nodeName, then allNodes, then the node selector (component-helpers' nodeaffinity: terms
ORed, requirements ANDed, an empty term selects nothing, matchFields read metadata.name).

The slices reach the scheduler through the API server, which refuses a selector kube could not
parse; one that slipped through anyway is refused here with NodeSelectorError rather than guessed.
"""

from __future__ import annotations

from kubesched.api.objects import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.api.selectors import Requirement

_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
NODE_NAME_FIELD = "metadata.name"


class NodeSelectorError(ValueError):
    """A node selector kube's nodeaffinity.NewNodeSelector would refuse."""


def node_matches(node: Node, node_name: str | None, all_nodes: bool | None, selector: NodeSelector | None) -> bool:
    """NodeMatches: nodeName first, then allNodes, then the selector; none of them: no node."""
    if node_name:
        return node.metadata.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return any(_term_matches(term, node) for term in selector.node_selector_terms if not _is_empty(term))
    return False


def _is_empty(term: NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


def _term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    labels = node.metadata.labels
    for expr in term.match_expressions:
        if not _label_requirement(expr).matches(labels):
            return False
    for expr in term.match_fields:
        if expr.operator not in ("In", "NotIn") or len(expr.values) != 1:
            raise NodeSelectorError(f"unsupported node selector field requirement {expr.key} {expr.operator} {expr.values}")
        value = node.metadata.name if expr.key == NODE_NAME_FIELD else ""
        if (value == expr.values[0]) != (expr.operator == "In"):
            return False
    return True


def _label_requirement(expr: NodeSelectorRequirement) -> Requirement:
    if expr.operator not in _LABEL_OPERATORS:
        raise NodeSelectorError(f"unsupported node selector operator {expr.operator!r} for key {expr.key!r}")
    return Requirement(expr.key, expr.operator, frozenset(expr.values))
