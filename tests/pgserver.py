"""A real PostgreSQL server for the tests: a throwaway cluster in a temporary directory,
listening on a Unix socket there only (no TCP port), password authentication (SCRAM), stopped
and removed at the end of the session.

Run as root (CI), the server runs as the `postgres` user the Debian package made (PostgreSQL
refuses to run as root); run as anyone else, it runs as that user."""

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from conftest import missing

USER = "fabench"
PASSWORD = "fb-test-secret"
PORT = 5439  # names the socket file in our own directory; nothing listens on TCP


def server_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


class PgServer:
    def __init__(self) -> None:
        bindir = server_bin()
        if bindir is None:
            missing("PostgreSQL server not installed (Debian package postgresql)")
        try:
            import psycopg  # noqa: F401
        except ImportError:
            missing("psycopg not installed (pip install 'psycopg[binary]')")
        assert bindir is not None
        self.bin = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="fabench-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.run_as: list[str] = []
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                missing("running as root needs the postgres user (Debian package postgresql)")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self.run_as = ["runuser", "-u", "postgres", "--"]
        pwfile = self.dir / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self.run_as:
            os.chown(pwfile, pwd.getpwnam("postgres").pw_uid, -1)
        self._pg(str(self.bin / "initdb"), "-D", str(self.data), "-U", USER,
                 "--auth=scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8", "--no-sync")
        pwfile.unlink()
        with open(self.data / "postgresql.conf", "a") as fh:
            fh.write(f"listen_addresses = ''\nunix_socket_directories = '{self.dir}'\n"
                     f"port = {PORT}\nmax_connections = 60\nshared_buffers = 16MB\n"
                     "fsync = on\n")
        self.start()
        self._n = 0

    def _pg(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*self.run_as, *argv], capture_output=True, text=True,
                              timeout=120, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"{argv[0]} exited {proc.returncode}: {proc.stderr}"
                                 f"{self.log.read_text() if self.log.exists() else ''}")
        return proc

    def start(self) -> None:
        self._pg(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w",
                 "-t", "60", "start")

    def crash(self) -> None:
        """Stop as a crash does: no checkpoint, recovery from the log on the next start."""
        self._pg(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w",
                 "stop")

    def stop(self) -> None:
        self._pg(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop",
                 check=False)

    def url(self, db: str, password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@/{db}?host={self.dir}&port={PORT}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg
        self._n += 1
        name = f"t{os.getpid()}_{self._n}_{int(time.time() * 1000) % 100000}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}".encode())
        return self.url(name)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
