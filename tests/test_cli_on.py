"""`--on WHERE`: scheduler words as separate words or, past argparse, as one quoted word; each
scheduler parses its own words."""

import shutil
from pathlib import Path

import pytest

from fabench.errors import FabenchError
from fabench.schedulers import OnWords, make_scheduler, split_on
from fabench.schedulers.hosts import HostsScheduler
from fabench.schedulers.slurm import SlurmScheduler


def test_on_words_and_one_quoted_word_agree() -> None:
    assert split_on(["hosts", "my hostfile"]) == OnWords("hosts", ["my hostfile"])
    assert split_on(["testbed:pair"]) == OnWords("testbed", ["pair"])
    assert split_on(["slurm:mpirun"]) == OnWords("slurm", ["mpirun"])
    # argparse takes `--ntasks-per-node=1` after `--on slurm` for an option of its own, so
    # sbatch options travel as one word and are split like a shell would.
    want = OnWords("slurm", ["mpirun", "-N", "2", "--ntasks-per-node=1"])
    assert split_on(["slurm:mpirun -N 2 --ntasks-per-node=1"]) == want
    assert split_on(["slurm mpirun -N 2 --ntasks-per-node=1"]) == want
    assert split_on(["slurm -p 'debug queue'"]) == OnWords("slurm", ["-p", "debug queue"])
    with pytest.raises(FabenchError, match="No closing quotation"):
        split_on(["slurm -p 'debug"])


def test_schedulers_parse_their_own_words(tmp_path: Path) -> None:
    hf = tmp_path / "hosts"
    hf.write_text("n1 slots=2\nn2\n")
    h = make_scheduler(["hosts", str(hf)])
    assert isinstance(h, HostsScheduler) and [x.name for x in h.hosts] == ["n1", "n2"]
    with pytest.raises(FabenchError, match="needs a hostfile"):
        make_scheduler(["hosts"])
    with pytest.raises(FabenchError, match="takes no argument"):
        make_scheduler(["local", "x"])
    with pytest.raises(FabenchError, match="unknown scheduler 'pbs'"):
        make_scheduler(["pbs"])
    if shutil.which("sbatch") is None:
        return  # the rest needs Slurm's client commands on PATH
    s = make_scheduler(["slurm:mpirun -N 2 --ntasks-per-node=1"])
    assert isinstance(s, SlurmScheduler)
    assert (s.starter, s.sbatch_args) == ("mpirun", ["-N", "2", "--ntasks-per-node=1"])
    s = make_scheduler(["slurm", "-p", "debug"])
    assert isinstance(s, SlurmScheduler) and (s.starter, s.sbatch_args) == ("srun",
                                                                            ["-p", "debug"])
