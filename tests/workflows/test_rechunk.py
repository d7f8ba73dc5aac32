"""``zarrdask.rechunk``: plans (memory bound per task, one task per target shard),
execution on the threaded scheduler and on a two-process cluster, arrays,
groups and Datasets, interoperability of sharded targets, and the errors."""

from __future__ import annotations

import itertools
import math
import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask import MemoryStore
from zarrdask.errors import ContainsArrayError, ContainsGroupError
from zarrdask.workflows import RechunkPlan, RechunkPlanError, rechunk
from zarrdask.workflows.plan import format_bytes, parse_max_mem, plan_array
from zarrdask.workflows.plan_dims import _floor_sum, block_extent, dim_stats


def _source(shape, chunks, *, dtype="i4", shards=None, store=None, **kwargs):
    data = np.arange(math.prod(shape), dtype=dtype).reshape(shape)
    return zarrdask.create_array(store or MemoryStore(), shape=shape, dtype=dtype, chunks=chunks,
                                 shards=shards, data=data, **kwargs), data


def _assert_one_task_per_unit(plan: RechunkPlan) -> None:
    """No two tasks writing the same array touch the same stored object."""
    for array in plan.arrays:
        for stage in array.stages:
            unit = stage.write_unit
            owner: dict[tuple, tuple] = {}
            for index in stage.indices():
                region = stage.region(index)
                ranges = [range(s.start // u, -(-s.stop // u)) for s, u in zip(region, unit)]
                for coords in itertools.product(*ranges):
                    assert owner.setdefault(coords, index) == index, (stage, coords)


# -- the pure parts -------------------------------------------------------------------
def test_parse_max_mem():
    assert parse_max_mem("100MB") == 100_000_000
    assert parse_max_mem("1GiB") == 2**30
    assert parse_max_mem(1234) == 1234
    with pytest.raises(ValueError, match="cannot read"):
        parse_max_mem("lots")
    with pytest.raises(ValueError, match="positive"):
        parse_max_mem(0)
    with pytest.raises(TypeError):
        parse_max_mem(1.5)


def test_floor_sum_and_dim_stats_match_brute_force(monkeypatch):
    rng = random.Random(0)
    for _ in range(500):
        n, m, a, b = rng.randrange(0, 40), rng.randrange(1, 20), rng.randrange(0, 50), rng.randrange(0, 50)
        assert _floor_sum(n, m, a, b) == sum((a * i + b) // m for i in range(n))
    monkeypatch.setattr("zarrdask.workflows.plan_dims._EXACT_BLOCKS", 2)  # the closed forms
    for _ in range(2000):
        size, block, read = rng.randrange(1, 200), rng.randrange(1, 30), rng.randrange(1, 40)
        dim_stats.cache_clear()
        n, largest, total = dim_stats(size, block, read)
        b, r = min(block, size), min(read, size)
        ext = [hi - lo for lo, hi in (block_extent(i, size, b, r) for i in range(-(-size // b)))]
        assert (n, total) == (len(ext), sum(ext))
        assert largest >= max(ext)
    dim_stats.cache_clear()


def test_one_pass_plan_grows_blocks_to_whole_source_chunks():
    # target chunks of 10 cut source chunks of 25: blocks grow to lcm 50, no chunk is read twice
    # the budget: a (50, 100) block plus two source chunks in flight (task_overhead)
    p = plan_array("a", (100, 100), "f8", (25, 100), (10, 100), None, 50 * 100 * 8 + 2 * 25 * 100 * 8)
    (stage,) = p.stages
    assert stage.overhead == 2 * 25 * 100 * 8
    assert p.intermediate_chunks is None
    assert stage.block == (50, 100)
    assert stage.bytes_read == stage.bytes_written == 100 * 100 * 8


def test_two_stage_plan_for_a_transpose():
    p = plan_array("a", (1000, 1000), "f4", (1, 1000), (1000, 1), None, 480_000, intermediate=True)
    c = p.intermediate_chunks
    s1, s2 = p.stages
    assert (s1.reads, s1.writes, s2.reads, s2.writes) == ("source", "intermediate", "intermediate", "target")
    # whole rows read, whole columns written, blocks made of whole intermediate chunks
    assert s1.block[1] == 1000 and s2.block[0] == 1000
    assert s1.block[0] % c[0] == 0 and s2.block[1] % c[1] == 0
    assert p.bytes_read == 2 * 4_000_000  # nothing read twice
    assert s1.overhead == 2 * 4 * max(1000, math.prod(c)) and s2.overhead == 2 * 4 * max(math.prod(c), 1000)
    assert p.peak_memory <= 480_000


def test_two_stages_when_they_move_fewer_bytes():
    # 5x5 target chunks cut 7x7 source chunks; one pass fits only one target chunk per task
    args = ("a", (70, 70), "u1", (7, 7), (5, 5), None, 196 + 2 * 49)
    one = plan_array(*args)
    two = plan_array(*args, intermediate=True)
    assert len(one.stages) == 1 and len(two.stages) == 2
    moved = lambda p: p.bytes_read + p.bytes_written
    assert moved(two) < moved(one)


def test_plan_summary():
    a, _ = _source((100, 100), (1, 100), dtype="f4")
    plan = rechunk(a, (100, 1), MemoryStore(), max_mem="4kB", temp_store=MemoryStore())
    text = str(plan)
    assert repr(plan) == text
    assert "2 stages" in text and f"{plan.ntasks} tasks" in text
    assert "stage 1: source -> intermediate (chunks" in text and "stage 2: intermediate -> target" in text
    assert "peak memory per task" in text and "moved" in text
    assert plan.nstages == 2 and plan.peak_memory <= 4000
    assert plan.ntasks == sum(1 for _ in plan.tasks())
    stages = plan.arrays[0].stages
    assert plan.bytes_read == sum(s.expanded(i) for s in stages for i in s.indices())
    assert sum(t.memory for t in plan.tasks()) == plan.bytes_read + sum(s.overhead * s.ntasks for s in stages)


# -- correctness over random cases ----------------------------------------------------
@st.composite
def cases(draw):
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 24)) for _ in range(nd))
    src = tuple(draw(st.integers(1, 12)) for _ in range(nd))
    dst = tuple(draw(st.integers(1, 12)) for _ in range(nd))
    shards = None
    if draw(st.booleans()):
        shards = tuple(c * draw(st.integers(1, 3)) for c in dst)
    unit = shards or dst
    floor = max(math.prod(min(c, s) for c, s in zip(src, shape)), math.prod(min(u, s) for u, s in zip(unit, shape)))
    floor *= 3  # a chunk or unit, plus two in flight (task_overhead)
    budget = draw(st.integers(floor, max(floor, 2 * math.prod(shape))))
    return shape, src, dst, shards, budget * 2, draw(st.booleans())


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_rechunk_random_cases(case):
    shape, src_chunks, chunks, shards, max_mem, with_temp = case
    a, data = _source(shape, src_chunks, dtype="i2")
    target, temp = MemoryStore(), MemoryStore() if with_temp else None
    try:
        plan = rechunk(a, chunks, target, max_mem=max_mem, target_shards=shards, temp_store=temp)
    except RechunkPlanError as e:
        assert not with_temp and "temp_store" in str(e)
        return
    for task in plan.tasks():
        assert task.memory <= max_mem, task
    assert plan.peak_memory <= max_mem
    _assert_one_task_per_unit(plan)
    out = plan.execute(progress=False, scheduler="threads")
    assert out.chunks == chunks and out.shards == shards
    np.testing.assert_array_equal(out[...], data)


@st.composite
def plan_cases(draw):
    nd = draw(st.integers(1, 4))
    shape = tuple(draw(st.integers(1, 3000)) for _ in range(nd))
    a = tuple(draw(st.integers(1, 200)) for _ in range(nd))
    w = tuple(draw(st.integers(1, 200)) for _ in range(nd))
    floor = max(math.prod(min(x, s) for x, s in zip(a, shape)), math.prod(min(x, s) for x, s in zip(w, shape)))
    return shape, a, w, 8 * draw(st.integers(3 * floor, 30 * floor))


@settings(max_examples=100, deadline=None)
@given(plan_cases())
def test_plans_of_large_arrays_fit(case):
    """Without running anything: a plan always exists with an intermediate, and
    every task (sampled at the array's corners and edges) fits."""
    shape, a, w, max_mem = case
    p = plan_array("x", shape, "f8", a, w, None, max_mem, intermediate=True)
    assert 0 < p.peak_memory <= max_mem
    for stage in p.stages:
        assert all(b % u == 0 or b >= s for b, u, s in zip(stage.block, stage.write_unit, shape))
        grid = stage.grid
        for index in {tuple(0 for _ in grid), tuple(n - 1 for n in grid), tuple(n // 2 for n in grid)}:
            assert stage.memory(index) <= stage.peak_memory
    try:
        one = plan_array("x", shape, "f8", a, w, None, max_mem)
    except RechunkPlanError:
        assert len(p.stages) == 2
    else:
        assert one.peak_memory <= max_mem and len(one.stages) == 1


def test_both_paths_are_taken():
    a, data = _source((60, 60), (1, 60))
    one = rechunk(a, (60, 1), MemoryStore(), max_mem=60 * 60 * 4 + 2 * 60 * 4)
    two = rechunk(a, (60, 1), MemoryStore(), max_mem=60 * 10 * 4 * 2, temp_store=MemoryStore())
    assert (one.nstages, two.nstages) == (1, 2)
    for plan in (one, two):
        np.testing.assert_array_equal(plan.execute(progress=False)[...], data)


def test_sharded_source_reads_inner_chunks():
    a, data = _source((40, 40), (5, 5), shards=(20, 20))
    # (40, 2) blocks expand to whole 5x5 inner chunks: up to (40, 10), not whole shards (40, 20)
    plan = rechunk(a, (40, 2), MemoryStore(), max_mem=40 * 10 * 4 + 2 * 40 * 2 * 4)
    assert plan.arrays[0].source_chunks == (5, 5)
    assert all(t.memory <= 40 * 10 * 4 + 2 * 40 * 2 * 4 for t in plan.tasks())
    np.testing.assert_array_equal(plan.execute(progress=False)[...], data)


def test_zero_size_and_0d_arrays():
    empty = zarrdask.create_array(MemoryStore(), shape=(0, 5), dtype="f4", chunks=(2, 2))
    plan = rechunk(empty, (3, 3), MemoryStore(), max_mem=100)
    assert plan.ntasks == 0
    assert plan.execute(progress=False).shape == (0, 5)
    scalar = zarrdask.create_array(MemoryStore(), shape=(), dtype="f8", chunks=(), data=np.float64(4.5))
    out = rechunk(scalar, (), MemoryStore(), max_mem=24).execute(progress=False)
    assert out[...] == 4.5


def test_fill_values_and_missing_chunks_kept():
    a = zarrdask.create_array(MemoryStore(), shape=(30, 30), dtype="f4", chunks=(10, 10), fill_value=-1.0)
    a[:10, :10] = 3.0
    out = rechunk(a, (30, 5), MemoryStore(), max_mem="10kB").execute(progress=False)
    assert out.fill_value == -1.0
    expected = np.full((30, 30), -1.0, "f4")
    expected[:10, :10] = 3.0
    np.testing.assert_array_equal(out[...], expected)
    assert out.nchunks_initialized == 2  # chunks equal to the fill value are not stored


def test_metadata_and_codecs_kept_and_overridden():
    a, data = _source((20, 20), (4, 4), dtype=">f8", attributes={"units": "m"}, dimension_names=["y", "x"],
                      fill_value=np.nan, compressors=[{"name": "gzip", "configuration": {"level": 3}}],
                      chunk_key_encoding={"name": "v2", "separator": "."})
    out = rechunk(a, {"x": 20}, MemoryStore(), max_mem="10kB").execute(progress=False)
    assert out.chunks == (4, 20)
    assert dict(out.attrs) == {"units": "m"} and out.dimension_names == ("y", "x")
    assert np.isnan(out.fill_value) and out.dtype == a.dtype
    assert [c.name for c in out.compressors] == ["gzip"]
    assert out.metadata.chunk_key_encoding.name == "v2"
    assert out.serializer.get_config() == a.serializer.get_config()
    np.testing.assert_array_equal(out[...], data)
    v2 = rechunk(a, (10, 10), MemoryStore(), max_mem="10kB",
                 target_options={"zarr_format": 2, "compressors": None, "attributes": {"b": 1}}).execute(progress=False)
    assert v2.zarr_format == 2 and v2.compressors == () and dict(v2.attrs) == {"b": 1}
    np.testing.assert_array_equal(v2[...], data)
    cast = rechunk(a, (10, 10), MemoryStore(), max_mem="10kB", target_options={"dtype": "f4"})
    np.testing.assert_array_equal(cast.execute(progress=False)[...], data.astype("f4"))


def test_v2_source_keeps_filters_order_and_separator():
    a, data = _source((12, 12), (5, 5), dtype="<i4", zarr_format=2, order="F", dimension_separator="/",
                      filters=[{"id": "delta", "dtype": "<i4"}])
    out = rechunk(a, (12, 3), MemoryStore(), max_mem=1000).execute(progress=False)
    assert out.zarr_format == 2 and out.order == "F" and out.metadata.dimension_separator == "/"
    assert [f.codec_id for f in out.filters] == ["delta"]
    np.testing.assert_array_equal(out[...], data)


def test_source_as_path_and_target_path(tmp_path):
    _, data = _source((10, 10), (2, 10), store=str(tmp_path / "src.zarr"))
    plan = rechunk(str(tmp_path / "src.zarr"), (10, 2), str(tmp_path / "dst.zarr"), max_mem=560,
                   target_path="deep/copy")
    out = plan.execute(progress=False)
    assert out.path == "deep/copy"
    np.testing.assert_array_equal(zarrdask.open_array(str(tmp_path / "dst.zarr"), path="deep/copy")[...], data)


def test_to_dask_and_progress(capsys):
    import dask

    a, data = _source((16, 16), (1, 16))
    plan = rechunk(a, (16, 1), MemoryStore(), max_mem=16 * 4 * 4 * 3, temp_store=MemoryStore())
    graph = plan.to_dask()
    assert plan.to_dask() is graph
    # the copies, one join between the stages, the intermediate's removal, the end
    assert len(graph.dask) == plan.ntasks + 3
    assert not plan.target.nchunks_initialized  # nothing written before computing
    dask.compute(graph, scheduler="sync")
    np.testing.assert_array_equal(plan.target[...], data)
    b, _ = _source((16, 16), (1, 16))
    rechunk(b, (16, 4), MemoryStore(), max_mem=1536).execute()
    assert "100% Completed" in capsys.readouterr().out


def test_target_is_created_lazily():
    a, _ = _source((8, 8), (4, 4))
    target = MemoryStore()
    plan = rechunk(a, (8, 8), target, max_mem=1000)
    assert list(target.list()) == []
    with pytest.raises(RuntimeError, match="to_dask"):
        _ = plan.target


# -- groups -------------------------------------------------------------------------------
def _group(store=None, zarr_format=3):
    root = zarrdask.open_group(store or MemoryStore(), mode="w", zarr_format=zarr_format,
                               attributes={"title": "root"})
    sub = root.create_group("sub", attributes={"level": 1})
    data = {}
    kw = {"dimension_names": ["time", "x"]} if zarr_format == 3 else {"attributes": {"_ARRAY_DIMENSIONS": ["time", "x"]}}
    t = root.create_array("t", shape=(24, 6), dtype="f4", chunks=(1, 6), fill_value=-9.0, **kw)
    data["t"] = np.arange(144, dtype="f4").reshape(24, 6)
    t[...] = data["t"]
    t.attrs.update({"units": "K"})
    kw1 = {"dimension_names": ["time"]} if zarr_format == 3 else {"attributes": {"_ARRAY_DIMENSIONS": ["time"]}}
    time = root.create_array("time", shape=(24,), dtype="i8", chunks=(4,), **kw1)
    data["time"] = np.arange(24, dtype="i8")
    time[...] = data["time"]
    m = sub.create_array("mask", shape=(6, 6), dtype="u1", chunks=(3, 3))
    data["sub/mask"] = np.eye(6, dtype="u1")
    m[...] = data["sub/mask"]
    return root, data


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_group_with_dimension_chunks(zarr_format):
    root, data = _group(zarr_format=zarr_format)
    plan = rechunk(root, {"time": 24}, MemoryStore(), max_mem="2kB", temp_store=MemoryStore())
    out = plan.execute(progress=False)
    assert isinstance(out, zarrdask.Group) and out.zarr_format == zarr_format
    assert dict(out.attrs) == {"title": "root"} and dict(out["sub"].attrs) == {"level": 1}
    assert out["t"].chunks == (24, 6) and out["time"].chunks == (24,)
    assert out["sub/mask"].chunks == (3, 3)  # no time dimension: copied as it is
    assert out["t"].fill_value == -9.0 and out["t"].attrs["units"] == "K"
    for name, values in data.items():
        np.testing.assert_array_equal(out[name][...], values)


def test_group_with_per_array_chunks_and_shards():
    root, data = _group()
    plan = rechunk(root, {"t": (24, 1), "sub/mask": {0: 6}}, MemoryStore(), max_mem="2kB",
                   target_shards={"t": (24, 2)}, temp_store=MemoryStore())
    out = plan.execute(progress=False)
    assert (out["t"].chunks, out["t"].shards) == ((24, 1), (24, 2))
    assert (out["sub/mask"].chunks, out["sub/mask"].shards) == ((6, 3), None)
    assert out["time"].chunks == (4,)
    _assert_one_task_per_unit(plan)
    for name, values in data.items():
        np.testing.assert_array_equal(out[name][...], values)


def test_group_with_one_tuple_for_matching_arrays():
    root, data = _group()
    out = rechunk(root, (12, 3), MemoryStore(), max_mem="2kB").execute(progress=False)
    assert out["t"].chunks == (12, 3) and out["sub/mask"].chunks == (12, 3) and out["time"].chunks == (4,)
    for name, values in data.items():
        np.testing.assert_array_equal(out[name][...], values)


def test_group_spec_errors():
    root, _ = _group()
    with pytest.raises(ValueError, match="no array"):
        rechunk(root, {"t": (1, 1), "nope": (1,)}, MemoryStore(), max_mem=100)
    with pytest.raises(ValueError, match="dimension"):
        rechunk(root, {"depth": 3}, MemoryStore(), max_mem=1000)
    with pytest.raises(ValueError, match="no array with 4 dimensions"):
        rechunk(root, (1, 1, 1, 1), MemoryStore(), max_mem=1000)


# -- errors --------------------------------------------------------------------------------
def test_errors():
    a, _ = _source((100, 100), (1, 100), dtype="f4")
    with pytest.raises(RechunkPlanError, match=r"one target chunk \(100, 100\) of float32 is 39.06 kiB"):
        rechunk(a, (100, 100), MemoryStore(), max_mem="4kB")
    with pytest.raises(RechunkPlanError, match=r"one target shard \(100, 10\)"):
        rechunk(a, (100, 1), MemoryStore(), max_mem="2kB", target_shards=(100, 10))
    with pytest.raises(RechunkPlanError, match=r"one source chunk \(1, 100\)"):
        rechunk(a, (1, 10), MemoryStore(), max_mem=200)
    with pytest.raises(ValueError, match=r"Pass temp_store=.*raise max_mem to 39.84 kiB"):
        rechunk(a, (100, 1), MemoryStore(), max_mem="4kB")
    store = MemoryStore()
    with pytest.raises(ValueError, match="another store"):
        rechunk(a, (100, 1), store, max_mem="4kB", temp_store=store)
    with pytest.raises(TypeError, match="target_chunks="):
        rechunk(a, (100, 1), MemoryStore(), max_mem="4kB", target_options={"chunks": (1, 1)})
    with pytest.raises(ValueError, match="2 dimensions"):
        rechunk(a, (100,), MemoryStore(), max_mem="40kB")
    with pytest.raises(ValueError, match="no dimension 'x'"):
        rechunk(a, {"x": 3}, MemoryStore(), max_mem="40kB")
    with pytest.raises(ValueError, match="positive"):
        rechunk(a, (0, 3), MemoryStore(), max_mem="40kB")
    with pytest.raises(Exception, match="multiple of chunks"):
        rechunk(a, (10, 10), MemoryStore(), max_mem="40kB", target_shards=(15, 10))
    taken = MemoryStore()
    zarrdask.create_array(taken, shape=(1,), dtype="i1")
    with pytest.raises(ContainsArrayError, match="exists"):
        rechunk(a, (10, 10), taken, max_mem="40kB")
    root, _ = _group()
    with pytest.raises(ContainsGroupError):
        rechunk(a, (10, 10), root.store, max_mem="40kB")


def test_lazy_top_level_export():
    code = (
        "import sys, zarrdask; assert 'zarrdask.workflows' not in sys.modules; "
        "f = zarrdask.rechunk; assert 'zarrdask.workflows' in sys.modules; "
        "from zarrdask.workflows import rechunk; assert f is rechunk"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- interoperability ---------------------------------------------------------------------
def test_sharded_target_read_by_zarr_python_and_tensorstore(tmp_path):
    zarr = pytest.importorskip("zarr")
    ts = pytest.importorskip("tensorstore")
    a, data = _source((48, 40), (1, 40), dtype="<u2")
    path = tmp_path / "sharded.zarr"
    plan = rechunk(a, (8, 4), str(path), max_mem=48 * 8 * 2 * 4, target_shards=(48, 8),
                   temp_store=str(tmp_path / "tmp.zarr"))
    assert plan.nstages == 2
    _assert_one_task_per_unit(plan)
    plan.execute(progress=False)
    z = zarr.open_array(str(path), mode="r")
    assert z.chunks == (8, 4) and z.shards == (48, 8)
    np.testing.assert_array_equal(z[...], data)
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}, open=True).result()
    np.testing.assert_array_equal(t.read().result(), data)


# -- distributed ----------------------------------------------------------------------------
def test_on_a_two_process_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    a, data = _source((64, 64), (1, 64), dtype="f4", store=str(tmp_path / "src.zarr"))
    plan = rechunk(a, (64, 2), str(tmp_path / "dst.zarr"), max_mem=64 * 8 * 4 * 4, target_shards=(64, 8),
                   temp_store=str(tmp_path / "tmp.zarr"))
    assert plan.nstages == 2
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    with cluster, distributed.Client(cluster):
        out = plan.execute()  # distributed.progress on the default client
    np.testing.assert_array_equal(out[...], data)
    assert out.shards == (64, 8)


# -- xarray ----------------------------------------------------------------------------------
@pytest.fixture
def dataset():
    xr = pytest.importorskip("xarray")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    ds = xr.Dataset(
        {
            "temp": (("time", "y", "x"), rng.random((24, 6, 8)).astype("f4"), {"units": "K"}),
            "station": (("time",), np.arange(24.0), {"long_name": "s"}),
        },
        coords={
            "time": pd.date_range("2000-01-01", periods=24, freq="h"),
            "y": np.arange(6),
            "x": np.linspace(0, 1, 8),
            "lat": (("y", "x"), rng.random((6, 8))),
        },
        attrs={"title": "test"},
    )
    ds.temp.encoding = {"dtype": "int16", "scale_factor": 0.001, "_FillValue": -9999}
    return ds


def _zarr_dataset(ds, store):
    import xarray as xr

    import zarrdask.xarray as zx

    zx.to_zarr(ds, store, encoding={"temp": {"chunks": (1, 6, 8), "dtype": "int16", "scale_factor": 0.001,
                                             "_FillValue": -9999}})
    return xr.open_dataset(store, engine="zarrdask")


@pytest.mark.parametrize("chunked", [False, True])
def test_dataset_with_and_without_intermediate(dataset, chunked):
    import xarray as xr

    src = _zarr_dataset(dataset, MemoryStore())
    if chunked:
        src = src.chunk({"time": 1})
    for max_mem, temp, stages in (("30kB", None, 1), (6000, MemoryStore(), 2)):
        target = MemoryStore()
        plan = rechunk(src, {"time": 24, "y": 2, "x": 2}, target, max_mem=max_mem, temp_store=temp)
        assert plan.nstages == stages
        assert all(t.memory <= parse_max_mem(max_mem) for t in plan.tasks())
        group = plan.execute(progress=False)
        assert group["temp"].chunks == (24, 2, 2)
        out = xr.open_dataset(target, engine="zarrdask")
        xr.testing.assert_identical(out.load(), src.load())
        assert out.temp.encoding["dtype"] == np.dtype("int16")
        assert out.temp.encoding["scale_factor"] == 0.001
        assert "lat" in out.coords and out.attrs == {"title": "test"}


def test_dataset_sharded_target_and_errors(dataset):
    import xarray as xr

    src = _zarr_dataset(dataset, MemoryStore())
    target = MemoryStore()
    plan = rechunk(src, {"time": 6}, target, max_mem="24kB", target_shards={"time": 12})
    plan.execute(progress=False)
    group = zarrdask.open_group(target)
    assert (group["temp"].chunks, group["temp"].shards) == ((6, 6, 8), (12, 6, 8))
    xr.testing.assert_identical(xr.open_dataset(target, engine="zarrdask").load(), src.load())
    with pytest.raises(ValueError, match="no dimension"):
        rechunk(src, {"depth": 2}, MemoryStore(), max_mem="4kB")
    with pytest.raises(RechunkPlanError, match="temp_store"):
        rechunk(src, {"time": 24, "y": 1, "x": 1}, MemoryStore(), max_mem=3000)


def test_v2_source_to_v3_target_moves_dimension_names():
    src = zarrdask.create_array(MemoryStore(), shape=(8, 6), dtype="f4", chunks=(8, 1), zarr_format=2,
                                attributes={"_ARRAY_DIMENSIONS": ["time", "x"], "units": "K"})
    src[:] = np.arange(48, dtype="f4").reshape(8, 6)
    target = zarrdask.rechunk(src, (1, 6), MemoryStore(), max_mem="1MB",
                              target_options={"zarr_format": 3}).execute(progress=False)
    assert target.zarr_format == 3 and target.dimension_names == ("time", "x")
    assert dict(target.attrs) == {"units": "K"}
    np.testing.assert_array_equal(target[:], src[:])


# -- what a task holds -------------------------------------------------------------------
@pytest.mark.parametrize("shards", [None, (64, 16, 16)])
def test_a_task_holds_no_more_than_it_declares(tmp_path, shards):
    """Each task of both stages, run alone under tracemalloc (numpy buffers and
    encoded bytes are traced): its peak of live memory stays under its declared
    memory (give or take 16 KiB of Python bookkeeping: the task's chunk keys and
    projections), and the declared memory stays under max_mem."""
    import tracemalloc

    from zarrdask.workflows._run import copy_block

    rng = np.random.default_rng(0)
    data = rng.normal(size=(64, 96, 96)).astype("f4")  # noise: the codecs cannot shrink it
    src = zarrdask.create_array(str(tmp_path / "src.zarr"), shape=data.shape, dtype="f4", chunks=(4, 96, 96),
                                data=data, compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    max_mem = 1_000_000
    plan = rechunk(src, (64, 8, 8), str(tmp_path / "dst.zarr"), max_mem=max_mem, target_shards=shards,
                   temp_store=str(tmp_path / "tmp.zarr"))
    assert plan.nstages == 2
    plan.to_dask()
    job = plan._jobs[0]
    tracemalloc.start()
    try:
        for stage in job.plan.stages:
            reads = job.source if stage.reads == "source" else job.temp
            writes = job.target if stage.writes == "target" else job.temp
            for index in stage.indices():
                tracemalloc.reset_peak()
                before = tracemalloc.get_traced_memory()[0]
                copy_block(reads, writes, stage.region(index))
                held = tracemalloc.get_traced_memory()[1] - before
                assert held <= stage.memory(index) + (16 << 10), (stage, index, held)
                assert stage.memory(index) <= max_mem
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(job.target[...], data)


def test_the_intermediate_is_uncompressed_and_removed(tmp_path):
    a, data = _source((64, 64), (1, 64), dtype="f4", compressors=[{"name": "zstd", "configuration": {"level": 3}}])
    temp = tmp_path / "tmp.zarr"
    plan = rechunk(a, (64, 1), MemoryStore(), max_mem=64 * 8 * 4 * 3, temp_store=str(temp))
    assert plan.nstages == 2
    plan.to_dask()
    inter = plan._jobs[0].temp
    assert inter.compressors == () and inter.filters == ()  # written once, read once: stored as it is
    out = plan.execute(progress=False)
    np.testing.assert_array_equal(out[...], data)
    assert [c.name for c in out.compressors] == ["zstd"]
    assert not [p for p in temp.rglob("*") if p.is_file()]  # chunks and metadata removed


def test_enough_tasks_for_every_worker():
    # 64 MiB: blocks stop growing at an eighth of it (8 tasks per stage: 4 per worker thread of 2)
    shape, a, w = (256, 256, 256), (64, 64, 64), (256, 16, 16)
    for min_tasks in (1, 8):
        p = plan_array("x", shape, "f4", a, w, None, 256 << 20, intermediate=True, min_tasks=min_tasks)
        counts = [s.ntasks for s in p.stages]
        assert all(n >= min_tasks for n in counts), (min_tasks, counts)
    # never below MIN_TASK_BYTES for the sake of more tasks
    small = plan_array("x", (64, 64, 64), "f4", (1, 64, 64), (64, 64, 64), None, 256 << 20, min_tasks=64)
    assert small.ntasks == 1


def test_min_tasks_follows_the_distributed_cluster():
    distributed = pytest.importorskip("distributed")
    from zarrdask.workflows._run import TASKS_PER_WORKER, min_tasks

    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=False, dashboard_address=":0",
                                  silence_logs=40) as cluster, distributed.Client(cluster):
        assert min_tasks() == 3 * TASKS_PER_WORKER


def test_a_worker_holds_its_threads_tasks_and_its_overhead_within_max_mem():
    """max_mem is a worker's: each of its threads runs a task of at most
    (max_mem - overhead) / threads, and the plan states the worker's peak."""
    from zarrdask.workflows.plan import plan_array

    args = ("x", (200, 500, 500), "f4", (200, 25, 25), (10, 500, 500), None, 100_000_000)
    one = plan_array(*args, intermediate=True, min_tasks=8, read_ahead=8, worker_overhead=10 << 20)
    two = plan_array(*args, intermediate=True, min_tasks=8, read_ahead=8, threads_per_worker=2,
                     worker_overhead=10 << 20)
    for p, threads in ((one, 1), (two, 2)):
        assert p.worker_peak_memory == threads * p.peak_memory + (10 << 20)
        assert p.worker_peak_memory <= 100_000_000
        assert p.peak_memory <= (100_000_000 - (10 << 20)) // threads
    assert two.peak_memory <= one.peak_memory
    # a budget under four times the overhead is the tasks' whole (examples and tests use tiny ones)
    tiny = plan_array("x", (100, 100), "f4", (1, 100), (100, 1), None, 4000, intermediate=True,
                      worker_overhead=10 << 20)
    assert tiny.peak_memory <= 4000 and tiny.worker_peak_memory == tiny.peak_memory + (10 << 20)
    with pytest.raises(RechunkPlanError, match=r"is a worker.s: each of its 2 threads runs a task of at most 30.52 MiB"):
        plan_array("x", (100, 4000, 1000), "f4", (100, 200, 1000), (100, 200, 1000), None, 64_000_000,
                   threads_per_worker=2, worker_overhead=10 << 20)
    # a plan that fits only with the whole budget: planned without the overhead, which the peak still states
    whole = plan_array("x", (2000, 500, 500), "f4", (10, 500, 500), (2000, 50, 50), None, 64_000_000,
                       intermediate=True, worker_overhead=4 << 20)
    assert whole.peak_memory > 64_000_000 - (4 << 20) and whole.worker_peak_memory > 64_000_000


def test_the_summary_states_the_peak_per_worker(tmp_path):
    src = zarrdask.create_array(str(tmp_path / "src.zarr"), shape=(400, 400), dtype="f4", chunks=(1, 400),
                                fill_value=0)
    plan = rechunk(src, (400, 1), str(tmp_path / "dst.zarr"), max_mem="64MB", temp_store=str(tmp_path / "t.zarr"))
    text = str(plan)
    assert f"; peak memory per worker {format_bytes(plan.worker_peak_memory)} (1 task + 6.00 MiB; max_mem 61.04 MiB)" \
        in text
    assert plan.worker_peak_memory == plan.peak_memory + (6 << 20) <= 64_000_000


def test_threads_per_worker_follows_the_distributed_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    from zarrdask.workflows._run import threads_per_worker

    assert threads_per_worker() == 1  # a local scheduler: each thread counts as a worker
    src = zarrdask.create_array(str(tmp_path / "src.zarr"), shape=(400, 400), dtype="f4", chunks=(1, 400),
                                fill_value=0)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=3, processes=False, dashboard_address=":0",
                                  silence_logs=40) as cluster, distributed.Client(cluster):
        assert threads_per_worker() == 3
        plan = rechunk(src, (400, 1), str(tmp_path / "dst.zarr"), max_mem="64MB")
        assert "(3 tasks + 6.00 MiB; max_mem" in str(plan)
        assert plan.worker_peak_memory == 3 * plan.peak_memory + (6 << 20) <= 64_000_000


@pytest.mark.parametrize("block, unit, expected", [
    ((20, 500, 500), (10, 500, 500), True),   # whole trailing planes
    ((200, 500, 50), (10, 500, 25), False),   # a unit spans part of the last axis of a longer block
    ((10, 100, 500), (10, 100, 500), True),   # the unit is the block
    ((20, 100, 500), (1, 100, 500), True),
    ((20, 100, 500), (2, 50, 500), False),
    ((2000, 25, 225), (2000, 25, 25), False),  # rows of 25 elements out of 225
    ((20, 100, 500), (1, 1, 500), True),
])
def test_units_encoded_in_place_are_contiguous_runs_of_the_block(block, unit, expected):
    from zarrdask.workflows.plan import encodes_in_place, task_overhead

    assert encodes_in_place(block, unit, (200, 500, 500)) is expected
    assert task_overhead(4, (1, 1, 1), unit, in_place=True) == 4 * math.prod(unit)  # the encoded bytes only
    assert task_overhead(4, (1, 1, 1), unit) == 8 * math.prod(unit)  # and a contiguous copy


@pytest.mark.parametrize("shape, a, w, shards", [
    ((40, 200, 200), (40, 10, 10), (2, 200, 200), None),
    ((40, 200, 200), (40, 10, 10), (2, 40, 40), (2, 200, 200)),
    ((97, 61), (7, 13), (97, 5), None),
])
def test_the_summary_counts_the_chunks_read_and_the_objects_written(shape, a, w, shards):
    """Each stage's reads (chunks touched by each block, summed over the blocks)
    and writes (one object per shard or chunk), counted one by one."""
    from zarrdask.workflows.plan import plan_array

    p = plan_array("x", shape, "f4", a, w, shards, 2_000_000, intermediate=True, min_tasks=8)
    for stage in p.stages:
        touched = 0
        for index in stage.indices():
            n = 1
            for sl, r in zip(stage.region(index), stage.read_chunks):
                n *= -(-sl.stop // r) - sl.start // r
            touched += n
        assert stage.chunk_reads == touched
        assert stage.unit_writes == math.prod(-(-s // u) for s, u in zip(shape, stage.write_unit))
    src = zarrdask.create_array(MemoryStore(), shape=shape, dtype="f4", chunks=a, fill_value=0)
    text = str(rechunk(src, w, MemoryStore(), max_mem=2_000_000, target_shards=shards, temp_store=MemoryStore()))
    last = text.splitlines()[-2]  # the last stage
    assert last.endswith(f"({p.stages[-1].unit_writes:,} {'shards' if shards else 'chunks'})"), last


def test_a_rectilinear_target_counts_its_chunks():
    from zarrdask.workflows.plan import plan_array

    p = plan_array("x", (10, 6), "f4", (3, 6), ((2, 3, 5), 6), None, 1_000_000)
    (stage,) = p.stages
    assert stage.unit_writes == 3  # one task, and one object, per chunk of the grid
    assert stage.chunk_reads == 1 + 2 + 3  # rows 0-1: chunk 0; 2-4: chunks 0, 1; 5-9: chunks 1, 2, 3
    src = zarrdask.create_array(MemoryStore(), shape=(10, 6), dtype="f4", chunks=(3, 6), fill_value=0)
    assert "(6 chunks), write 240 B (3 chunks)" in str(rechunk(src, ((2, 3, 5), 6), MemoryStore(), max_mem=1_000_000))
