from dataclasses import replace

import pytest

from fabench.cli import build_parser
from fabench.errors import SpecError
from fabench.plan.plan import (
    KERNEL_OPTIONS,
    QUICK_COLLECTIVE_ITERATIONS,
    QUICK_ITERATIONS,
    configuration_of,
    configuration_text,
    make_plan,
    settings_from_args,
    settings_from_words,
)
from fabench.plan.spec import load_spec, parse_spec


def test_default_spec_plan_matches_the_issue() -> None:
    plan = make_plan(load_spec(None))
    combos = {(p.kernel.name, str(p.transport), p.ranks) for p in plan}
    for k in ("mpi.latency", "mpi.bw", "mpi.bibw"):
        assert (k, "shm", 2) in combos and (k, "tcp", 2) in combos
    for k in ("mpi.allreduce", "mpi.alltoall", "mpi.allgather", "mpi.gather"):
        assert (k, "shm", 2) in combos and (k, "shm", 4) in combos
    assert len(plan) == 14
    assert len({p.key for p in plan}) == len(plan)


def test_scalars_become_lists_and_repeats_interleave() -> None:
    spec = parse_spec("repeats: 2\nruns:\n  - kernel: mpi.latency\n    transport: [shm, tcp]\n")
    plan = make_plan(spec)
    assert [p.repeat for p in plan] == [0, 0, 1, 1]


def test_unknown_key_names_key_and_line() -> None:
    text = "name: x\nruns:\n  - kernel: mpi.latency\n    transprot: tcp\n"
    with pytest.raises(SpecError) as exc:
        parse_spec(text, "s.yaml")
    msg = str(exc.value)
    assert "s.yaml line 4" in msg and "runs[0].transprot" in msg and "unknown key" in msg


def test_bad_transport_is_explained() -> None:
    text = "runs:\n  - kernel: mpi.bw\n    transport: [shm, infiniband]\n"
    with pytest.raises(SpecError) as exc:
        parse_spec(text, "s.yaml")
    msg = str(exc.value)
    assert "line 3" in msg and "runs[0].transport" in msg and "infiniband" in msg


def test_unknown_kernel_lists_known_ones() -> None:
    with pytest.raises(SpecError, match=r"line 2.*unknown kernel 'mpi\.latencyy'.*mpi\.latency"):
        parse_spec("runs:\n  - kernel: mpi.latencyy\n", "s.yaml")


def test_bad_sizes_and_ranks() -> None:
    with pytest.raises(SpecError, match="runs\\[0\\].sizes"):
        parse_spec("runs:\n  - kernel: mpi.bw\n    sizes: 4M:1K\n")
    with pytest.raises(SpecError, match="ranks must be >= 1"):
        parse_spec("runs:\n  - kernel: mpi.bw\n    ranks: 0\n")


def test_yaml_syntax_error_has_line() -> None:
    with pytest.raises(SpecError, match="line 3: not valid YAML"):
        parse_spec("runs:\n  - kernel: mpi.bw\n  transport: [shm\n", "s.yaml")


def test_missing_runs() -> None:
    with pytest.raises(SpecError, match="runs: required key is missing"):
        parse_spec("name: x\n")


def test_quick_sets_fewer_iterations() -> None:
    """--quick runs fewer iterations than every size's default, the large sizes included
    (they take nearly all the time): below the kernels' large-size defaults, not equal to them."""
    plan = make_plan(load_spec(None), quick=True)
    lat = next(p for p in plan if p.kernel.name == "mpi.latency")
    assert lat.settings.iterations == QUICK_ITERATIONS["latency"] < 1000  # large-size default
    assert lat.settings.warmup == QUICK_ITERATIONS["latency"] // 10
    argv = lat.kernel_argv()
    assert argv[argv.index("--iterations") + 1] == str(QUICK_ITERATIONS["latency"])
    bw = next(p for p in plan if p.kernel.name == "mpi.bw")
    assert bw.settings.iterations == QUICK_ITERATIONS["bw"] < 20
    coll = next(p for p in plan if p.kernel.name == "mpi.allreduce")
    assert coll.settings.iterations == QUICK_COLLECTIVE_ITERATIONS < 100
    full = make_plan(load_spec(None))
    assert all(p.settings.iterations is None for p in full)  # the kernels' own defaults


def test_odd_ranks_dropped_for_pair_kernels() -> None:
    plan = make_plan(parse_spec("runs:\n  - kernel: mpi.mbw_mr\n    ranks: [2, 3, 4]\n"))
    assert [p.ranks for p in plan] == [2, 4]


def test_each_kernel_option_is_a_spec_key_a_command_option_and_kernel_argv() -> None:
    """One declaration (plan.KernelSettings) gives the spec's keys, the options of every
    command that runs kernels, and the argv: a spec and a command line that set the same
    options plan the same kernel command line, and the argv reads back as the settings."""
    spec = parse_spec("runs:\n  - kernel: mpi.allreduce\n    sizes: 8,1K\n    iterations: 7\n"
                      "    warmup: 2\n    window: 3\n    rounds: 2\n    validate: true\n"
                      "    hugepages: true\n    datatype: double\n"
                      "    args: [--osu-iterations, '5']\n")
    [run] = make_plan(spec)
    words = ["--sizes", "8,1K", "--iterations", "7", "--warmup", "2", "--window", "3",
             "--rounds", "2", "--validate", "--hugepages", "--datatype", "double"]
    assert run.settings.argv(run.kernel) == [*words, "--osu-iterations", "5"]
    assert settings_from_words(run.kernel, run.settings.argv(run.kernel)) == run.settings
    for command in (["bench", "mpi.allreduce"], ["sim", "mpi.allreduce", "-f", "x", "-N", "2"],
                    ["tune", "ab", "p", "--bench", "mpi.allreduce"]):
        args = build_parser().parse_args(
            [*command, *[w if w != "--rounds" or command[0] != "tune" else "--kernel-rounds"
                         for w in words]])
        assert settings_from_args(run.kernel, args) == replace(run.settings, extra=())
    for opt in KERNEL_OPTIONS:  # each one is a spec key (validate's is spelled so too)
        with pytest.raises(SpecError, match=f"runs\\[0\\].{opt.name}"):
            parse_spec(f"runs:\n  - kernel: mpi.allreduce\n    {opt.name}: [1]\n")
    with pytest.raises(SpecError, match="'char', 'int', 'float' or 'double'"):
        parse_spec("runs:\n  - kernel: mpi.allreduce\n    datatype: MPI_FLOAT\n")


def test_configuration_is_what_the_kernel_settings_measure() -> None:
    """Sizes and iteration counts say how much is measured (runs differing there pool); every
    other option says what (runs differing there are different series). An option at the
    kernel's own default is not a difference."""
    assert configuration_of(["--sizes", "4M", "--iterations", "9", "--warmup", "1"]) == ()
    assert configuration_of(["--rounds", "1", "--datatype", "float"]) == ()
    conf = configuration_of(["--sizes", "4M", "--hugepages", "--window", "16", "--streams",
                             "8"])
    assert conf == (("window", "16"), ("hugepages", ""), ("args", "--streams 8"))
    assert configuration_text(conf) == "window=16 hugepages --streams 8"
    assert configuration_of(["--window"]) == (("args", "--window"),)  # unreadable: kept whole
