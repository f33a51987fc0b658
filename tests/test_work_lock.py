"""One trainer per work folder: the lock beside it, with real processes.

The case: Snakemake's parent was SIGKILLed, its trainer lives on as an
orphan, and a rerun starts a second trainer on the same work folder. The
second must wait for the first (then resume from what it left) or, asked
not to wait, stop with one line naming the holder; a lock file left by a
dead process must never block.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reappraisal.errors import PipelineInputError
from reappraisal.training.locks import lock_holder, work_lock_path
from reappraisal.training.work_dir import open_work_dir, work_dir_beside

SPEC = {"lr": 1e-3, "data": "abc"}

#: Opens the work folder (argv[1]) with SPEC, leaves a complete checkpoint-2 of 4 there, says so, and trains on.
HOLDER = f"""
import json, sys, time
from pathlib import Path
from reappraisal.training.work_dir import open_work_dir
work = open_work_dir(sys.argv[1], {SPEC!r})
ck = Path(sys.argv[1]) / "checkpoint-2"
ck.mkdir()
(ck / "model.safetensors").write_bytes(b"w")
(ck / "trainer_state.json").write_text(json.dumps({{"global_step": 2, "max_steps": 4}}))
print("held", flush=True)
time.sleep(600)
"""

#: A rerun: opens the same folder (waiting), then writes what it found to argv[2].
RERUN = f"""
import json, logging, os, sys
from reappraisal.training.work_dir import open_work_dir
logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
with open_work_dir(sys.argv[1], {SPEC!r}) as work:
    found = {{"resume": work.resume.name if work.resume else None, "pid": os.getpid()}}
    with open(sys.argv[2], "w") as fh:
        json.dump(found, fh)
"""


def _start_holder(work: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(work)], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.strip() == "held", f"the holder did not start (exit {proc.poll()})"
    return proc


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(30)


def _wait_for(predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_a_rerun_waits_for_the_orphan_then_resumes_from_its_checkpoint(tmp_path):
    work = work_dir_beside(tmp_path / "seed0")
    holder = _start_holder(work)
    err, found = tmp_path / "rerun.err", tmp_path / "found.json"
    try:
        assert lock_holder(work)["pid"] == holder.pid
        with err.open("w") as err_fh:
            rerun = subprocess.Popen([sys.executable, "-c", RERUN, str(work), str(found)], stderr=err_fh)
        try:
            assert _wait_for(lambda: "in use by" in err.read_text()), err.read_text()
            time.sleep(1.0)  # it really waits: no progress while the holder trains
            assert rerun.poll() is None and not found.exists()
            waiting = [line for line in err.read_text().splitlines() if "in use by" in line]
            assert len(waiting) == 1  # one line, naming the holder and the folder
            assert f"pid {holder.pid}" in waiting[0] and str(work) in waiting[0]
            _kill(holder)  # the orphan dies (or finishes): the kernel drops its lock
            assert rerun.wait(60) == 0, err.read_text()
        finally:
            _kill(rerun)
    finally:
        _kill(holder)
    assert json.loads(found.read_text()) == {"resume": "checkpoint-2", "pid": rerun.pid}  # what the orphan left
    assert not work_lock_path(work).exists()  # released with the stage


def test_a_rerun_that_may_not_wait_names_the_holder_and_touches_nothing(tmp_path):
    work = work_dir_beside(tmp_path / "seed0")
    holder = _start_holder(work)
    try:
        with pytest.raises(PipelineInputError) as refused:
            open_work_dir(work, {**SPEC, "lr": 2e-3}, wait=False)  # other settings: would empty the folder
        message = str(refused.value)
        assert f"pid {holder.pid}" in message and str(work) in message and len(message.splitlines()) == 1
        assert (work / "checkpoint-2" / "trainer_state.json").is_file()  # the holder's checkpoints are intact

        t0 = time.monotonic()
        with pytest.raises(PipelineInputError, match=f"pid {holder.pid}"):
            open_work_dir(work, SPEC, wait=0.5)  # a timeout: waits that long, then refuses
        assert time.monotonic() - t0 >= 0.5
    finally:
        _kill(holder)
    with open_work_dir(work, SPEC, wait=False) as mine:  # the holder is gone: free
        assert mine.resume.name == "checkpoint-2"
        assert lock_holder(work)["pid"] == os.getpid()


def test_a_lock_file_left_by_a_dead_process_does_not_block(tmp_path):
    work = work_dir_beside(tmp_path / "seed0")
    holder = _start_holder(work)
    _kill(holder)  # SIGKILLed: its lock file stays, with its pid, but nobody holds the lock
    lock = work_lock_path(work)
    assert lock == tmp_path / ".seed0.work.lock"  # beside the work folder, not inside it
    assert json.loads(lock.read_text())["pid"] == holder.pid
    assert lock_holder(work) is None
    t0 = time.monotonic()
    with open_work_dir(work, SPEC, wait=False) as mine:
        assert time.monotonic() - t0 < 5
        assert mine.resume.name == "checkpoint-2"
        assert json.loads(lock.read_text())["pid"] == os.getpid()
    assert not lock.exists()


def test_the_lock_file_is_a_hidden_sibling_of_the_work_folder(tmp_path):
    assert work_lock_path(tmp_path / ".seed0.work").name == ".seed0.work.lock"
    assert work_lock_path(tmp_path / "arm" / "checkpoints") == tmp_path / "arm" / ".checkpoints.lock"
    with open_work_dir(tmp_path / ".grm.work", SPEC) as work:
        # emptying the folder (new settings, success) never removes the lock
        (work.path / "checkpoint-1").mkdir()
        shutil.rmtree(work.path)
        assert lock_holder(work.path)["pid"] == os.getpid()
        with pytest.raises(RuntimeError, match="already holds"):  # a second open in this process would wait for itself
            open_work_dir(work.path, SPEC)
    assert lock_holder(tmp_path / ".grm.work") is None
    open_work_dir(tmp_path / ".grm.work", SPEC)  # a WorkDir nobody keeps holds nothing
    assert lock_holder(tmp_path / ".grm.work") is None and not work_lock_path(tmp_path / ".grm.work").exists()


#: Holds the folder (argv[1]) with the spec in argv[3] until argv[2] appears, then finishes as a trainer does:
#: outputs in place (argv[4]), work folder removed, lock released.
FINISHER = """
import json, shutil, sys, time
from pathlib import Path
from reappraisal.training.work_dir import open_work_dir
with open_work_dir(sys.argv[1], json.loads(sys.argv[3])) as work:
    print("held", flush=True)
    while not Path(sys.argv[2]).exists():
        time.sleep(0.05)
    Path(sys.argv[4]).write_text("the orphan's model")
    shutil.rmtree(work.path)
"""

#: A rerun through the command line's handling: exit 0 and say so when the run was finished elsewhere.
TAKER = f"""
import json, sys
from pathlib import Path
from reappraisal.errors import FinishedElsewhere
from reappraisal.training.work_dir import open_work_dir
try:
    with open_work_dir(sys.argv[1], {SPEC!r}) as work:
        Path(sys.argv[2]).write_text(json.dumps({{"trained": True, "resume": None}}))
except FinishedElsewhere as exc:
    Path(sys.argv[2]).write_text(json.dumps({{"trained": False, "why": str(exc)}}))
"""


@pytest.mark.parametrize("orphan_spec, takes", [(SPEC, True), ({**SPEC, "lr": 2e-3}, False)])
def test_a_rerun_that_waited_for_an_orphan_that_finished_takes_its_output(tmp_path, orphan_spec, takes):
    work, go, found, model = tmp_path / ".seed0.work", tmp_path / "go", tmp_path / "found.json", tmp_path / "seed0"
    orphan = subprocess.Popen([sys.executable, "-c", FINISHER, str(work), str(go), json.dumps(orphan_spec), str(model)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert orphan.stdout.readline().strip() == "held"
        rerun = subprocess.Popen([sys.executable, "-c", TAKER, str(work), str(found)], stderr=subprocess.PIPE,
                                 text=True)
        assert "is in use by" in rerun.stderr.readline()  # the rerun found the orphan and waits for it
        assert rerun.poll() is None and not found.exists()
        go.touch()
        assert orphan.wait(60) == 0 and rerun.wait(60) == 0
    finally:
        _kill(orphan)
    result = json.loads(found.read_text())
    assert result["trained"] is not takes  # the same run finished: nothing to train; another run's: train
    assert model.read_text() == "the orphan's model"
    if takes:
        assert "finished the same run" in result["why"] and not work.exists()
    assert not work_lock_path(work).exists()
