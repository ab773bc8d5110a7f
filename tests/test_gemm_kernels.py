"""The C GEMM kernels on their own: tools/bench_gemm.c compiled against
src_c/ and run in `check` mode compares every ISA this CPU has (generic,
AVX2, AVX-512) with a float64 triple loop over odd sizes, transposed and
sliced operands, alpha/beta, batched calls, offset-table operands (the
implicit im2col convolution uses) and fused row/column biases."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["tools/bench_gemm.c", "src_c/gemm.c", "src_c/gemm_generic.c", "src_c/gemm_avx2.c",
           "src_c/gemm_avx512.c", "src_c/cpu.c"]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_gemm_harness_checks(tmp_path):
    exe = tmp_path / "bench_gemm"
    cmd = ["gcc", "-std=c11", "-O2", "-fopenmp", "-fno-math-errno", "-fno-trapping-math",
           f"-I{ROOT / 'src_c' / 'include'}", "-DEMBER_GEMM_TUNE",
           *[str(ROOT / s) for s in SOURCES], "-lm", "-o", str(exe)]
    subprocess.run(cmd, check=True, capture_output=True)
    out = subprocess.run([str(exe), "check"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:]
    assert "all checks passed" in out.stdout, out.stdout[-2000:]
    assert "FAIL" not in out.stdout
