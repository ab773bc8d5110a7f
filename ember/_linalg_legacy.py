"""PyTorch's top-level linear-algebra names (``ember.det``, ``ember.svd`` ...), bound here as
``ember.*`` functions and Tensor methods; they route to the code behind ``ember.linalg``."""
from ember import _linalg as _L

det = _L.det
logdet = _L.logdet
slogdet = _L._legacy_slogdet
inverse = _L.inv
pinverse = _L.pinverse
matrix_exp = _L.matrix_exp
matrix_power = _L.matrix_power
svd = _L._legacy_svd
qr = _L._legacy_qr
cholesky = _L._legacy_cholesky
cholesky_solve = _L.cholesky_solve
cholesky_inverse = _L.cholesky_inverse
triangular_solve = _L.triangular_solve
lu = _L._lu_legacy
lu_solve = _L._lu_solve_legacy
lu_unpack = _L.lu_unpack
geqrf = _L.geqrf
orgqr = _L.householder_product
ormqr = _L.ormqr
cross = _L._legacy_cross
diagonal = _L._legacy_diagonal
vander = _L._legacy_vander

__ember_functions__ = ["det", "logdet", "slogdet", "inverse", "pinverse", "matrix_exp",
                       "matrix_power", "svd", "qr", "cholesky", "cholesky_solve",
                       "cholesky_inverse", "triangular_solve", "lu", "lu_solve", "lu_unpack",
                       "geqrf", "orgqr", "ormqr", "cross", "diagonal", "vander"]
__ember_methods__ = ["det", "logdet", "slogdet", "inverse", "pinverse", "matrix_exp",
                     "matrix_power", "svd", "qr", "cholesky", "cholesky_solve",
                     "cholesky_inverse", "triangular_solve", "lu", "lu_solve", "geqrf",
                     "orgqr", "ormqr", "cross"]
