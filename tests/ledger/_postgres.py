"""Start and stop a throwaway PostgreSQL cluster for tests and benchmarks."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

USERS = {"owner": "owner", "alice": "analyst", "bob": "analyst", "carol": "auditor", "eve": None}
"""The login roles the cluster has, and the dpledger role each is a member of."""


def find_binaries() -> Path | None:
    """The directory holding initdb, pg_ctl and postgres (DPLEDGER_PG_BIN first)."""
    candidates = []
    if os.environ.get("DPLEDGER_PG_BIN"):
        candidates.append(os.environ["DPLEDGER_PG_BIN"])
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    found = shutil.which("pg_ctl")
    if found:
        candidates.append(str(Path(found).resolve().parent))
    for folder in candidates:
        path = Path(folder)
        if all((path / tool).exists() for tool in ("initdb", "pg_ctl", "postgres")):
            return path
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """A running cluster: its socket directory, port and binaries."""

    base: Path
    bindir: Path
    port: int
    user: str | None  # the system user the server runs as (None: the current one)
    fsync: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def socket_dir(self) -> Path:
        return self.base / "sock"

    @property
    def data(self) -> Path:
        return self.base / "data"

    def url(self, user: str = "postgres", ledger: str | None = None, db: str = "postgres") -> str:
        query = f"host={self.socket_dir}&port={self.port}"
        if ledger is not None:
            query += f"&ledger={ledger}"
        return f"postgresql://{user}@/{db}?{query}"

    def conninfo(self, user: str = "postgres", db: str = "postgres") -> str:
        return f"host={self.socket_dir} port={self.port} user={user} dbname={db}"

    def run(self, *args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
        extra = {"user": self.user} if self.user else {}
        return subprocess.run(
            list(args), check=check, capture_output=True, text=True, **extra, **kwargs
        )

    def pg_ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.run(str(self.bindir / "pg_ctl"), "-D", str(self.data), *args, check=check)

    def start(self) -> None:
        options = f"-k {self.socket_dir} -p {self.port} -c listen_addresses=''"
        if not self.fsync:
            options += " -c fsync=off -c full_page_writes=off"
        for key, value in self.extra.items():
            options += f" -c {key}={value}"
        self.pg_ctl("-l", str(self.base / "log"), "-o", options, "-w", "-t", "60", "start")

    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def kill(self, sig: int = signal.SIGKILL) -> None:
        os.kill(self.postmaster_pid(), sig)

    def cpu_seconds(self) -> float:
        """CPU time of the server so far: the postmaster and its finished children."""
        try:
            fields = (Path("/proc") / str(self.postmaster_pid()) / "stat").read_text()
        except OSError:
            return float("nan")
        values = fields.rsplit(")", 1)[1].split()
        ticks = sum(int(v) for v in values[11:15])  # utime, stime, cutime, cstime
        return ticks / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if os.environ.get("DPLEDGER_PG_CPU_REPORT"):
            with open(os.environ["DPLEDGER_PG_CPU_REPORT"], "a") as out:
                out.write(f"server CPU seconds: {self.cpu_seconds():.2f}\n")
        self.pg_ctl("-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.base, ignore_errors=True)

    def sql(self, statement: str, user: str = "postgres") -> list[tuple]:
        import psycopg

        with psycopg.connect(self.conninfo(user), autocommit=True) as conn:
            cur = conn.execute(statement)
            return cur.fetchall() if cur.description else []


def start_cluster(fsync: bool = False, **extra: str) -> tuple[Cluster | None, str]:
    """(a running cluster with the schema and test users, "") or (None, why not)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None, "psycopg is not installed (pip install 'psycopg[binary]')"
    bindir = find_binaries()
    if bindir is None:
        return None, (
            "the PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found; "
            "install Debian's postgresql-15 or set DPLEDGER_PG_BIN"
        )
    user = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return None, "running as root and there is no 'postgres' system user to run the server"
        user = "postgres"
    base = Path(tempfile.mkdtemp(prefix="dpledger-pg-"))
    (base / "sock").mkdir()
    if user:
        entry = pwd.getpwnam(user)
        for path in (base, base / "sock"):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    os.chmod(base, 0o755)
    cluster = Cluster(base, bindir, _free_port(), user, fsync, dict(extra))
    try:
        cluster.run(
            str(bindir / "initdb"),
            "-D",
            str(cluster.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        )
        cluster.start()
        from dpledger.ledger.pgconnect import init_db

        for login in USERS:
            cluster.sql(f"CREATE ROLE {login} LOGIN")
        grants: dict[str, list[str]] = {}
        for login, role in USERS.items():
            if role:
                grants.setdefault(role, []).append(login)
        init_db(cluster.url("postgres"), grant=grants)
    except (subprocess.CalledProcessError, OSError, Exception) as error:
        detail = getattr(error, "stderr", "") or ""
        log = base / "log"
        if log.exists():
            detail += log.read_text()[-2000:]
        cluster.stop()
        return None, f"the throwaway cluster did not start: {error} {detail}"
    return cluster, ""


def wait_until_ready(cluster: Cluster, timeout: float = 30.0) -> None:
    """Poll until the server accepts connections again."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(cluster.conninfo(), connect_timeout=2):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
