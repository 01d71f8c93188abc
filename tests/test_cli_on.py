"""`--on WHERE`: launcher options as separate words or, past argparse, as one quoted word."""

from fabench.commands._common import parse_on


def test_on_words_and_one_quoted_word_agree() -> None:
    assert parse_on(["hosts", "my hostfile"]) == ("hosts", {"hostfile": "my hostfile"})
    assert parse_on(["testbed:pair"]) == ("testbed", {"testbed": "pair"})
    assert parse_on(["slurm:mpirun"]) == ("slurm", {"starter": "mpirun"})
    # argparse takes `--ntasks-per-node=1` after `--on slurm` for an option of its own, so
    # sbatch options travel as one word and are split like a shell would.
    want = ("slurm", {"starter": "mpirun", "sbatch_args": ["-N", "2", "--ntasks-per-node=1"]})
    assert parse_on(["slurm:mpirun -N 2 --ntasks-per-node=1"]) == want
    assert parse_on(["slurm mpirun -N 2 --ntasks-per-node=1"]) == want
    assert parse_on(["slurm -p 'debug queue'"]) == ("slurm", {"sbatch_args": ["-p",
                                                                             "debug queue"]})
