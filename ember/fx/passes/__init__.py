"""Graph passes over ``ember.fx`` graphs."""

from ember.fx.passes import shape_prop

__all__ = ["shape_prop"]
