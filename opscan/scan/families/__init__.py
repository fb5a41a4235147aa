"""The matcher families: each module applies one kind of rule matcher to the nodes it cares about.

# NOTE [matcher families]
# The walk (visitor.py) visits the hot statements of a file once and owns the traversal: guards,
# tests, enclosing functions, which children are visited. A family only matches. It is a module
# with any of:
#   CHECKS: {ast node type: check(ctx, node, guarded)}   run on every visited node of that type,
#           before its children (for Name/Attribute, `ctx.resolved` holds the node's dotted name;
#           for Import/ImportFrom, `ctx.bound` holds the statement's (local, dotted) bindings)
#   bind(ctx, stmt, guarded)   each module-level statement, before the walk (constants, kernels)
#   prepare(ctx)               after those bindings, before the walk (wrappers, extra hot names)
#   finish(ctx)                after the walk (hits that depend on the whole file)
# all reading and extending the one FileContext (context.py). A new kind of detection is a new
# module listed in FAMILIES; the checks of one node type run in FAMILIES order.
"""

from opscan.scan.families import (
    dispatch,
    guards,
    imports,
    kernels,
    names,
    natives,
    strings,
)

FAMILIES = (imports, names, guards, dispatch, strings, kernels, natives)

__all__ = ["FAMILIES"]
