import pytest

from flopscope_analysis.names import CaseName, CaseNameError, parse_case_name, strip_gbench_suffixes

GOOD = [
    "copy/simd/f32/cpu/n=268435456",
    "copy/contiguous/f32/cpu/n=268435456",
    "matmul/cublas/bf16/cuda:0/m=8192,n=8192,k=8192",
    "convert/hw/f32->bf16/cpu/n=1048576",
    "peak/fma/f32/cpu/n=1024/threads=2",
    "copy/grid_stride/f8e4m3/cuda:12/n=0/layout=row.major/tag=A-b:c_1",
    "x/y/z/cpu/_k=-3",
]


@pytest.mark.parametrize("name", GOOD)
def test_round_trip(name):
    parsed = parse_case_name(name)
    assert parsed.format() == name
    assert str(parsed) == name
    assert parse_case_name(parsed.format()) == parsed


def test_fields():
    name = parse_case_name("matmul/cublas/bf16/cuda:0/m=8192,n=4096,k=64/epilogue=gelu")
    assert (name.family, name.variant, name.dtype, name.device) == ("matmul", "cublas", "bf16", "cuda:0")
    assert name.shape == (("m", 8192), ("n", 4096), ("k", 64))
    assert name.extras == (("epilogue", "gelu"),)
    assert name.shape_text() == "m=8192,n=4096,k=64/epilogue=gelu"
    conversion = parse_case_name("convert/hw/f32->bf16/cpu/n=16")
    assert (conversion.source_dtype, conversion.target_dtype) == ("f32", "bf16")


def test_built_from_parts_formats_like_the_harness():
    name = CaseName("copy", "simd", "f32", "cpu", (("n", 1024),), (("threads", "2"),))
    assert name.format() == "copy/simd/f32/cpu/n=1024/threads=2"


BAD = [
    "BM_Copy/1024",
    "copy/simd/f32/cpu",  # no shape
    "Copy/simd/f32/cpu/n=1",  # upper case family
    "copy/si-md/f32/cpu/n=1",
    "copy/simd/f32->/cpu/n=1",
    "copy/simd/f32->bf16->f8/cpu/n=1",
    "copy/simd/f32/gpu/n=1",
    "copy/simd/f32/cuda/n=1",
    "copy/simd/f32/cuda:x/n=1",
    "copy/simd/f32/cpu/n=1.5",
    "copy/simd/f32/cpu/n=",
    "copy/simd/f32/cpu/1024",
    "copy/simd/f32/cpu/N=1",
    "copy/simd/f32/cpu/1n=1",
    "copy/simd/f32/cpu/n=1,",
    "copy/simd/f32/cpu/n=99999999999999999999",
    "copy/simd/f32/cpu/n=1/threads",
    "copy/simd/f32/cpu/n=1/threads=",
    "copy/simd/f32/cpu/n=1/x=a b",
    "copy/simd/f32/cpu/n=1/x=a/b",
    "copy//f32/cpu/n=1",
    "",
]


@pytest.mark.parametrize("name", BAD)
def test_rejects(name):
    with pytest.raises(CaseNameError) as error:
        parse_case_name(name)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("run_name, name", [
    ("copy/simd/f32/cpu/n=1024/real_time", "copy/simd/f32/cpu/n=1024"),
    ("copy/simd/f32/cuda:0/n=1024/manual_time", "copy/simd/f32/cuda:0/n=1024"),
    ("peak/fma/f32/cpu/n=1024/threads=2/iterations:100/repeats:2/threads:2",
     "peak/fma/f32/cpu/n=1024/threads=2"),
    ("copy/simd/f32/cpu/n=8/min_time:0.500/min_warmup_time:1.000/process_time/real_time",
     "copy/simd/f32/cpu/n=8"),
    ("copy/simd/f32/cpu/n=8/tag=real_time", "copy/simd/f32/cpu/n=8/tag=real_time"),  # an extra stays
])
def test_strip_gbench_suffixes(run_name, name):
    assert strip_gbench_suffixes(run_name) == name
