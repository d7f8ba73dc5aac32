"""The bfloat16 vs float16 benchmark's table (``benchmarks/ml_dtypes.py``) from made-up results:
the ratios are the figures it was given, and zarr-python's missing bfloat16 is said so, not an error."""

from __future__ import annotations

from benchmarks import ml_dtypes


def _results() -> list[dict]:
    out = []
    for codec in ml_dtypes.CODECS:
        for impl in ml_dtypes.IMPLS:
            for dtype, t in (("float16", 1.0), ("bfloat16", 2.0)):
                if impl == "zarr-python" and dtype == "bfloat16":
                    out.append({"impl": impl, "dtype": dtype, "codec": codec, "error": "ValueError: no bfloat16"})
                    continue
                scale = 2.0 if impl == "tensorstore" else 1.0
                out.append({"impl": impl, "dtype": dtype, "codec": codec, "write": [t * scale, 9.0],
                            "read": [t * scale / 2], "correct": True, "stored_bytes": 2 * 64 * 64 // 2})
    return out


def test_rows_and_markdown():
    results = _results()
    table = ml_dtypes.rows(results, 64)
    assert len(table) == len(ml_dtypes.CODECS) * len(ml_dtypes.OPS) * len(ml_dtypes.IMPLS)
    zd = next(r for r in table if r["impl"] == "zarrdask" and r["operation"] == "write all")
    assert zd["bf16_over_f16"] == 2.0 and zd["float16_s"] == 1.0
    ts = next(r for r in table if r["impl"] == "tensorstore" and r["operation"] == "read all")
    assert ts["float16_zd_advantage"] == 2.0 and ts["bfloat16_zd_advantage"] == 2.0
    zp = next(r for r in table if r["impl"] == "zarr-python" and r["operation"] == "read all")
    assert zp["bfloat16_s"] is None and zp["bf16_over_f16"] is None
    meta = {"size": 64, "chunk": 32, "threads": 2, "repeat": 1, "write_repeat": 2, "workdir": "/tmp/x",
            "cpu": "cpu", "ncpu": 2, "loadavg": 0.1, "date": "today", "versions": {"zarr": "3.1.6"},
            "commit": "abc", "results": [{k: r.get(k) for k in ("impl", "dtype", "codec", "correct", "stored_bytes")}
                                         for r in results]}
    text = ml_dtypes.markdown(table, meta)
    assert "n/a (no bfloat16)" in text and "error" not in text.split("|---|")[1]
    assert "2.00x" in text and "all equal" in text
    assert "bfloat16 zarrdask 2.00x" in text  # the compression ratio note
