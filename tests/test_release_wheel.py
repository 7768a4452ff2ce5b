"""The wheel with the features releases have (no cargo features; ``make release-wheel``, here in
the debug profile, which reuses what the Rust tests compiled: features, not the optimizer, decide
what is checked) against the development build the other tests use: test-only fault injection
(``tidelake.fault.*`` storage options, which can abort or hang the process, and the engine's
named failpoints) is compiled out of it and refused with a typed error, while the same table
works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow as pa

import tidelake

REPO = Path(__file__).resolve().parent.parent

FAULTS = [{"tidelake.fault.nth": "1", "tidelake.fault.action": "abort"},
          {"tidelake.fault.nth": "1", "tidelake.fault.op": "head", "tidelake.fault.action": "hang"},
          {"tidelake.fault.nth": "1000"}]

SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import tidelake
assert tidelake.__file__.startswith(sys.argv[1]), tidelake.__file__
location, faults = sys.argv[2], json.loads(sys.argv[3])
answers = [tidelake.open_table(location).to_arrow().num_rows]
for options in faults:
    try:
        tidelake.open_table(location, storage_options=options).to_arrow()
        answers.append("accepted")
    except tidelake.UnsupportedError as e:
        answers.append(str(e))
try:
    tidelake._internal.set_failpoint("commit-before-snapshot", "panic")
    answers.append("accepted")
except tidelake.UnsupportedError as e:
    answers.append(str(e))
print(json.dumps(answers))
"""


def release_wheel() -> Path:
    # run as a top-level make (a recursive one, under `make test`, prints its directories)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(REPO), "release-wheel",
                          "RELEASE_WHEEL_PROFILE=dev"], check=True, capture_output=True, text=True, env=env).stdout
    (wheel,) = [line for line in out.splitlines() if line.endswith(".whl")]
    return Path(wheel)


def test_the_release_wheel_refuses_fault_injection_options(tmp_path):
    location = str(tmp_path / "t")
    t = tidelake.create_table(location, pa.schema([pa.field("k", pa.int64(), nullable=False)]), primary_keys=["k"])
    t.write(pa.table({"k": [1, 2, 3]}))
    # the development build takes them (a fault on the thousandth request: none here)
    assert tidelake.open_table(location, storage_options=FAULTS[2]).to_arrow().num_rows == 3

    site = tmp_path / "release"
    with zipfile.ZipFile(release_wheel()) as wheel:
        wheel.extractall(site)
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(site), location, json.dumps(FAULTS)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    rows, *refusals, failpoint = json.loads(run.stdout)
    assert rows == 3
    assert len(refusals) == len(FAULTS)
    assert "no fault injection (a release build)" in failpoint, failpoint  # and no panic injected
    for options, refusal in zip(FAULTS, refusals):
        assert "fault injection is for tests only" in refusal and "tidelake.fault." in refusal, (options, refusal)
