"""ember.compile's optimising backend: lowering table, fusion, C code, cache."""
from .backend import CompiledGraph, InductorBackend, compile_graph
from .cache import cache_dir, compiler_command
from .lowering import covered_ops

__all__ = ["CompiledGraph", "InductorBackend", "compile_graph", "cache_dir",
           "compiler_command", "covered_ops"]
