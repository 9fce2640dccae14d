"""Captures — setup runs once; every later start of the same environment starts from a snapshot.

After packages and setup succeed, the instance is captured (on docker a committed image; E2B,
Modal, Daytona and Tenki snapshots on theirs); the next provision of the same definition starts
from it and runs only `refresh`. Two processes building the same definition at once build once.
Each instance prints its build log: `setup` where setup ran, then `refresh` for each start from
the capture (the first start here finds one too when a run before made it).

Needs: Docker with the sandbox image (see README).
Run:   python3 examples/captures.py
"""

import subprocess
import sys
from pathlib import Path

from praisonai import Sandbox

ENVIRONMENT = Path(__file__).with_name("captures.yaml")

for start in ("first", "second"):
    with Sandbox.create(environment=ENVIRONMENT) as sb:  # the file's backend: docker
        log = sb.exec("cat /opt/build.log", check=True).stdout.split()
        mode = sb.exec("echo $MODE").stdout.strip()
        print(f"[{start}] {sb.id}: {', '.join(log)}; MODE={mode}")

# The captures of this PRAISONAI_HOME (`praisonai env captures --prune` removes old ones)
subprocess.run([sys.executable, "-m", "praisonai", "env", "captures"], check=True)
