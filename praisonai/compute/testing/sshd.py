"""A throwaway OpenSSH server on 127.0.0.1 for tests and benchmarks of the SSH provider.

It runs Debian's ``/usr/sbin/sshd`` with its own config, host key, authorized key and port, and
logs in a user whose login shell is ``/bin/sh`` (no heavy profile: root's bash may source a
``.bashrc`` that costs about 100 ms per channel). As root a dedicated user is created for the
server's lifetime; otherwise the current user logs in with the shell it has::

    with SSHServer() as server:
        provider = SSHCompute(**server.connect_kwargs())

``kill()`` ends the server *and* every connection it serves, like a host going down;
``start()`` brings it back on the same port with the same host key.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

from praisonai.runtime import descendants

SSHD = "/usr/sbin/sshd"


def sshd_reason() -> str | None:
    """Why a test sshd cannot run here, or None when it can."""
    if not os.path.exists(SSHD):
        return "OpenSSH's sshd is not installed (apt-get install openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen is not installed (apt-get install openssh-client)"
    return None


class SSHServer:
    """One sshd process; see the module docstring."""

    #: Users made by the servers of this process, so a test run checks its own leftovers only.
    users_made: ClassVar[set[str]] = set()

    def __init__(self, *, sshd_args: tuple[str, ...] = (), groups: tuple[str, ...] = ()) -> None:
        """``sshd_args`` are extra sshd options (``("-r",)``: no re-exec per connection);
        ``groups``, supplementary groups of the user created as root (``("docker",)``: it may use
        the engines' sockets)."""
        self.sshd_args = sshd_args
        self.groups = groups
        self.dir = Path(tempfile.mkdtemp(prefix="praisonai-sshd-"))
        self.dir.chmod(0o755)
        self.host = "127.0.0.1"
        self.port = _free_port()
        self.key_file = str(self.dir / "client_key")
        self.known_hosts = str(self.dir / "known_hosts")
        self.home = self.dir / "home"
        self._created_user = os.geteuid() == 0
        self.user = f"pz-ssh-{secrets.token_hex(3)}" if self._created_user else getpass.getuser()
        if self._created_user:
            SSHServer.users_made.add(self.user)
        #: The user's password; password logins work only for the user created as root.
        self.password = secrets.token_urlsafe(12) if self._created_user else None
        self.process: subprocess.Popen[bytes] | None = None
        self._prepare()

    def connect_kwargs(self, **overrides: Any) -> dict[str, Any]:
        """Keyword arguments for ``SSHCompute`` that reach this server under the strict policy."""
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "key_file": self.key_file,
            "known_hosts": self.known_hosts,
            **overrides,
        }

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> SSHServer:
        """Start (or restart) sshd and wait until it accepts connections."""
        with open(self.dir / "sshd.log", "ab") as log:  # the child keeps its own copy
            self.process = subprocess.Popen(
                [SSHD, "-D", "-e", *self.sshd_args, "-f", str(self.dir / "sshd_config")],
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"sshd exited: {(self.dir / 'sshd.log').read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection((self.host, self.port), 0.2):
                return self
            time.sleep(0.02)
        raise RuntimeError("sshd did not start listening within 10 s")

    def kill(self) -> None:
        """SIGKILL the server and every process it started (connections, their shells)."""
        if self.process is None:
            return
        # sshd's connection processes call setsid: a process group kill would miss them
        for pid in descendants(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.kill()
        self.process.wait()
        self.process = None

    def close(self) -> None:
        """Kill the server, remove its files and the user created for it (and whatever that user
        still runs: userdel refuses a user with processes)."""
        self.kill()
        if self._created_user:
            for _ in range(50):
                if subprocess.run(["pkill", "-KILL", "-u", self.user], check=False).returncode == 1:
                    break  # none left
                time.sleep(0.02)
            subprocess.run(["userdel", self.user], capture_output=True, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> SSHServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- set-up ----------------------------------------------------------------------------

    def _prepare(self) -> None:
        keygen = ["ssh-keygen", "-q", "-t", "ed25519", "-N", ""]
        subprocess.run([*keygen, "-f", str(self.dir / "host_key")], check=True)
        subprocess.run([*keygen, "-f", self.key_file], check=True)
        host_pub = (self.dir / "host_key.pub").read_text().split()[:2]
        Path(self.known_hosts).write_text(f"[{self.host}]:{self.port} {' '.join(host_pub)}\n")
        shutil.copy(f"{self.key_file}.pub", self.dir / "authorized_keys")
        self.home.mkdir()
        if self._created_user:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
            useradd = ["useradd", "--no-create-home", "--home-dir", str(self.home), "--shell", "/bin/sh"]
            useradd += ["--groups", ",".join(self.groups)] if self.groups else []
            subprocess.run([*useradd, self.user], check=True, capture_output=True)
            # A password too (useradd's "!" is a locked account, which sshd refuses without PAM)
            hashed = subprocess.run(
                ["openssl", "passwd", "-6", "-stdin"],
                input=self.password,
                text=True,
                capture_output=True,
                check=True,
            ).stdout.strip()
            subprocess.run(["usermod", "-p", hashed, self.user], check=True, capture_output=True)
            shutil.chown(self.home, self.user)
            shutil.chown(self.dir / "authorized_keys", self.user)
        (self.dir / "sshd_config").write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    f"ListenAddress {self.host}",
                    f"HostKey {self.dir / 'host_key'}",
                    f"PidFile {self.dir / 'sshd.pid'}",
                    f"AuthorizedKeysFile {self.dir / 'authorized_keys'}",
                    "StrictModes no",
                    "UsePAM no",
                    f"PasswordAuthentication {'yes' if self.password else 'no'}",
                    "KbdInteractiveAuthentication no",
                    "PubkeyAuthentication yes",
                    "AllowTcpForwarding yes",
                    "Subsystem sftp internal-sftp",
                    "MaxStartups 64",
                    "LogLevel ERROR",
                    "",
                ]
            )
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
