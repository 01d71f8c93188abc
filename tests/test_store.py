import shutil
import subprocess
from pathlib import Path

import pytest

from fabench.provenance import git_revision, run_environment
from fabench.records import ResultRecord
from fabench.store import Store


def test_roundtrip_keeps_every_sample(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as st:
        cid = st.begin_campaign("c", {"x": 1}, {"host": "h"})
        rid = st.begin_run(campaign_id=cid, key="k", kernel="mpi.allreduce", transport="shm",
                           mpi="openmpi", ranks=4, launcher="local", repeat=0, settings={})
        rec = ResultRecord(kernel="mpi.allreduce", size=64, iterations=3, warmup=1, unit="us",
                           times=[1.5, 2.25, 3.0], times_min=[1.0, 1.0, 1.0],
                           times_mean=[1.2, 1.3, 1.4], datatype="MPI_FLOAT", count=16,
                           validated=True, bytes_per_sample=64)
        st.add_result(rid, rec)
        st.finish_run(rid, status="ok", selected_transport="ob1/vader", notes=["n"])
        st.end_campaign(cid, "finished")
    with Store(tmp_path / "s.sqlite") as st:
        (run,) = st.runs(cid)
        assert run.status == "ok" and run.selected_transport == "ob1/vader"
        (back,) = list(st.results(run.id))
        assert back.times == [1.5, 2.25, 3.0]
        assert back.times_min == [1.0, 1.0, 1.0] and back.times_mean == [1.2, 1.3, 1.4]
        assert back.validated is True and back.count == 16
        assert st.completed_keys(cid) == {"k"}


def test_git_revision_only_from_a_real_commit(tmp_path: Path) -> None:
    """Provenance stores a revision or nothing, never git's error message."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_revision(plain) is None  # not a checkout (no .git above a pytest tmp dir)
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    assert git_revision(repo) is None  # a checkout without a commit: git describe fails
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "c"], check=True)
    rev = git_revision(repo / "sub" / "dir")  # found from below the top, like the package
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert rev is not None and rev.startswith(head) and "fatal" not in rev


def test_run_environment_keeps_what_was_set_and_what_was_inherited() -> None:
    inherited = {"UCX_TLS": "tcp", "FI_PROVIDER": "tcp", "MPIR_CVAR_CH4_NETMOD": "ofi",
                 "HOME": "/root", "PATH": "/bin", "OMPI_MCA_btl": "self,tcp"}
    env = run_environment({"OMPI_MCA_btl": "self,vader", "OMPI_ALLOW_RUN_AS_ROOT": "1"},
                          inherited)
    assert env["environment_set"] == {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_MCA_btl": "self,vader"}
    assert env["environment_inherited"] == {"FI_PROVIDER": "tcp", "MPIR_CVAR_CH4_NETMOD": "ofi",
                                            "OMPI_MCA_btl": "self,tcp", "UCX_TLS": "tcp"}
    # what the ranks saw: fabench's value wins, as in the launchers; no unrelated variables
    assert env["environment"] == {"FI_PROVIDER": "tcp", "MPIR_CVAR_CH4_NETMOD": "ofi",
                                  "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_MCA_btl": "self,vader",
                                  "UCX_TLS": "tcp"}
