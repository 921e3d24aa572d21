"""The campaign file: its items (counted and named independently), and errors naming file and key."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from karyamorph.campaign.definition import CampaignError, load_campaign
from karyamorph.campaign.items import expand
from karyamorph.campaign.plan import definition_hash, plan_of

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "datasets" / "kernels"
SHIPPED = ROOT / "datasets" / "campaigns" / "compile_sweep.toml"


def write(tmp_path: Path, body: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(f'[campaign]\nname = "t"\n{body}')
    return path


def test_the_shipped_sweep_is_every_kernel_size_and_arch_once() -> None:
    campaign = load_campaign(SHIPPED)
    items = expand(campaign)
    archs = ["sm_80", "sm_90", "sm_100", "sm_120"]
    # Written out by hand from the file: three n-kernels at 4^k * 4096, and zipped 2-D/3-D sizes.
    kernels = ("vadd", "scale", "reduce_sum")
    sizes = (4096, 65536, 1048576, 16777216)
    expected = [f"../kernels/{k}.toml n={n} {a}" for k in kernels for n in sizes for a in archs]
    rows_cols = ((256, 256), (1024, 1024), (4001, 3000), (8192, 8192))
    expected += [f"../kernels/transpose.toml rows={r} cols={c} {a}" for r, c in rows_cols for a in archs]
    expected += [
        f"../kernels/sgemm.toml m={s} n={s} k={s} {a}" for s in (256, 512, 1024, 2048) for a in archs
    ]
    assert sorted(i.key for i in items) == sorted(expected)
    assert len(items) >= 50 and [i.position for i in items] == list(range(len(items)))
    assert plan_of(campaign).names == ("compile", "sass", "static")
    assert not plan_of(campaign).needs_gpu


def test_sizes_cross_unless_zipped_and_ranges_are_inclusive(tmp_path: Path) -> None:
    spec = (KERNELS / "sgemm.toml").as_posix()
    path = write(
        tmp_path,
        f"""archs = ["sm_90"]
[[sweep]]
specs = ["{spec}"]
sizes.m = {{ from = 64, to = 192, step = 64 }}
sizes.k = {{ from = 16, to = 256, times = 4 }}
""",
    )
    keys = [i.key for i in expand(load_campaign(path))]
    got = [(i.size_dict["m"], i.size_dict["n"], i.size_dict["k"]) for i in expand(load_campaign(path))]
    assert got == [(m, 1024, k) for m, k in itertools.product((64, 128, 192), (16, 64, 256))]
    assert len(set(keys)) == 9 and all(k.endswith(" sm_90") for k in keys)


def test_a_repeated_item_runs_once_and_no_arch_means_the_native_one(tmp_path: Path) -> None:
    spec = (KERNELS / "vadd.toml").as_posix()
    path = write(
        tmp_path,
        f"""[[sweep]]
specs = ["{spec}", "{KERNELS.as_posix()}/v*.toml"]
sizes.n = [10, 20, 10]
""",
    )
    items = expand(load_campaign(path))
    assert [i.size_dict for i in items] == [{"n": 10}, {"n": 20}]
    assert all(i.arch is None and i.key.endswith(" native") for i in items)


def test_the_definition_hash_follows_items_and_stages(tmp_path: Path) -> None:
    spec = (KERNELS / "vadd.toml").as_posix()
    body = f'[[sweep]]\nspecs = ["{spec}"]\nsizes.n = [10, 20]\n'
    a = load_campaign(write(tmp_path, 'stages = ["compile"]\n' + body, "a.toml"))
    b = load_campaign(write(tmp_path, '# a comment changes nothing\nstages = ["compile"]\n' + body, "b.toml"))
    c = load_campaign(write(tmp_path, 'stages = ["compile", "static"]\n' + body, "c.toml"))
    d = load_campaign(write(tmp_path, 'stages = ["compile"]\n' + body.replace("20", "30"), "d.toml"))
    ha, hb, hc, hd = (definition_hash(x, expand(x), plan_of(x)) for x in (a, b, c, d))
    assert ha == hb and len({ha, hc, hd}) == 3


VADD = '[[sweep]]\nspecs = ["K/vadd.toml"]\n'


@pytest.mark.parametrize(
    ("body", "where", "words"),
    [
        ("", "c.toml", "missing [[sweep]]"),
        ('[[sweep]]\nspecs = ["nothing*.toml"]\n', "c.toml: sweep[0].specs[0]", "matches no file"),
        (VADD + "sizes.q = [1]\n", "c.toml: sweep[0].sizes.q", "has no size 'q'"),
        (VADD + "sizes.n = [1.5]\n", "c.toml: sweep[0].sizes.n", "list of integers"),
        (VADD + "sizes.n = {from = 8, to = 4, step = 1}\n", "sweep[0].sizes.n", "from <= to"),
        (VADD + "sizes.n = {from = 1, to = 9}\n", "sweep[0].sizes.n", "exactly one of"),
        (VADD + "sizes.n = {from = 1, to = 100000, step = 1}\n", "sizes.n", "more than 10000"),
        (VADD.replace("vadd", "sgemm") + "zip = true\nsizes.m = [64]\nsizes.k = [16, 32]\n", "sweep[0].zip",
         "one length"),
        (VADD + 'archs = ["sm_75x"]\n', "c.toml: sweep[0].archs", "unsupported arch"),
        ('stages = ["compile", "sas"]\n' + VADD, "c.toml: campaign.stages", "'sas'"),
        ("timeout_s = -1\n" + VADD, "c.toml: campaign.timeout_s", "> 0"),
        ("color = 1\n" + VADD, "c.toml: [campaign]", "unknown key(s) color"),
        ('[[sweep]]\nspec = ["K/vadd.toml"]\n', "c.toml: sweep[0]", "unknown key(s) spec"),
    ],
)  # fmt: skip
def test_errors_name_the_file_and_the_key(tmp_path: Path, body: str, where: str, words: str) -> None:
    path = write(tmp_path, body.replace("K/", KERNELS.as_posix() + "/"))
    with pytest.raises(CampaignError) as err:
        campaign = load_campaign(path)
        plan_of(campaign)
        expand(campaign)
    assert where in str(err.value) and words in str(err.value)


def test_a_spec_that_does_not_load_is_named(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('[kernel]\nentry = "k"\n')
    path = write(tmp_path, '[[sweep]]\nspecs = ["bad.toml"]\n')
    with pytest.raises(CampaignError, match=r"c.toml: sweep\[0\].specs: spec .*bad.toml: .*missing ptx"):
        expand(load_campaign(path))


def test_file_level_errors(tmp_path: Path) -> None:
    with pytest.raises(CampaignError, match="campaign file not found"):
        load_campaign(tmp_path / "none.toml")
    (tmp_path / "x.toml").write_text("[campaign\n")
    with pytest.raises(CampaignError, match=r"x\.toml: not valid TOML"):
        load_campaign(tmp_path / "x.toml")
    (tmp_path / "y.toml").write_text('[campaign]\nname = ""\n')
    with pytest.raises(CampaignError, match=r"y\.toml: campaign\.name: expected a non-empty string"):
        load_campaign(tmp_path / "y.toml")
