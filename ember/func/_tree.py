"""Flatten nested tuples, lists and dicts of values into leaves and back."""
from __future__ import annotations


def flatten(tree):
    """``(leaves, spec)``: the leaves in order and what ``unflatten`` needs to rebuild."""
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for x in tree:
            lv, s = flatten(x)
            leaves.extend(lv)
            specs.append(s)
        return leaves, (type(tree), len(tree), specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        for k in tree:
            lv, s = flatten(tree[k])
            leaves.extend(lv)
            specs.append(s)
        return leaves, (dict, list(tree), specs)
    return [tree], None


def _count(spec):
    return 1 if spec is None else sum(_count(s) for s in spec[2])


def unflatten(leaves, spec):
    it = iter(leaves)

    def build(s):
        if s is None:
            return next(it)
        kind, keys, subs = s
        values = [build(sub) for sub in subs]
        if kind is dict:
            return dict(zip(keys, values))
        if kind is tuple or kind is list:
            return kind(values)
        return kind(*values)          # namedtuple

    return build(spec)


def broadcast_prefix(prefix, tree, what):
    """Expand ``prefix`` (a value, or a structure matching the top of ``tree``) to one
    value per leaf of ``tree``."""
    if isinstance(prefix, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(prefix) != len(tree):
            raise ValueError(f"{what}: expected a structure of length {len(tree)}, got "
                             f"{len(prefix)}")
        return [v for p, t in zip(prefix, tree) for v in broadcast_prefix(p, t, what)]
    if isinstance(prefix, dict) and isinstance(tree, dict):
        if set(prefix) != set(tree):
            raise ValueError(f"{what}: expected keys {sorted(tree)}, got {sorted(prefix)}")
        return [v for k in tree for v in broadcast_prefix(prefix[k], tree[k], what)]
    if isinstance(prefix, (tuple, list, dict)):
        raise ValueError(f"{what}: the structure {prefix!r} does not match the inputs")
    return [prefix] * len(flatten(tree)[0])
