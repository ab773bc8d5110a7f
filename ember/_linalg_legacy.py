"""PyTorch's top-level linear-algebra names (``ember.det``, ``ember.svd`` ...), declared
in ``ember/_ops.py`` as ``ember.*`` functions and Tensor methods.

Each routes to the code behind ``ember.linalg`` (``ember/_linalg.py``), which is
imported on the first call so that ``import ember`` stays cheap."""

# name here -> function of ember._linalg
_TARGETS = {
    "det": "det", "logdet": "logdet", "slogdet": "_legacy_slogdet", "inverse": "inv",
    "pinverse": "pinverse", "matrix_exp": "matrix_exp", "matrix_power": "matrix_power",
    "svd": "_legacy_svd", "qr": "_legacy_qr", "cholesky": "_legacy_cholesky",
    "cholesky_solve": "cholesky_solve", "cholesky_inverse": "cholesky_inverse",
    "triangular_solve": "triangular_solve", "lu": "_lu_legacy", "lu_solve": "_lu_solve_legacy",
    "lu_unpack": "lu_unpack", "geqrf": "geqrf", "orgqr": "householder_product",
    "ormqr": "ormqr", "cross": "_legacy_cross",
}


def _route(name: str, target: str):
    def fn(*args, **kwargs):
        from ember import _linalg
        return getattr(_linalg, target)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "ember"
    fn.__doc__ = f"PyTorch's ``torch.{name}`` (see ``ember._linalg.{target}``)."
    return fn


for _name, _target in _TARGETS.items():
    globals()[_name] = _route(_name, _target)
