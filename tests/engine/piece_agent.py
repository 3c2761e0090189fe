"""Test agent for pieces: delegates through ``bees delegate`` and/or does a piece's work.

Environment: AGENT_LOG (file to append to); DELEGATE (JSON list of ``[AGENT, TASK, INPUT]``,
handed out at once, in parallel); ACTIONS (JSON list of ``[ACTION, INPUT]`` run through
``bees action``); FAIL (exit 4 with ``no sources`` on stderr); HOLD (a file: inside a piece,
log ``holding AGENT PIECE`` and wait while it exists); EXPECT (JSON list, one text per
delegation: the agent checks each piece's answer and exits 5 with ``wrong answer from AGENT``
on stderr when one differs or failed); DETACH (with DELEGATE: wait only until each piece's
agent logs ``run AGENT``, then log ``detached`` and end without its answers). Inside a piece
(``BEES_PIECE``)
it writes ``AGENT.md`` (the task and input) in its folder and prints ``AGENT found: TASK``.
Log lines: ``run AGENT PIECE``, then per delegation ``delegate AGENT EXIT TEXT | ERROR``
(TEXT: the piece's ``text`` from ``--json``; ERROR: the JSON error's message, else the last
stderr line), per action ``ACTION EXIT``, then ``end AGENT``.
A stage's agent writes ``draft.md`` joining the texts its pieces gave back.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

agent, piece = os.environ["BEES_AGENT"], os.environ.get("BEES_PIECE", "-")
log = os.environ["AGENT_LOG"]


def write(line: str) -> None:
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


write(f"run {agent} {piece}")
asks = json.loads(os.environ.get("DELEGATE", "[]"))
running = [subprocess.Popen(["bees", "delegate", name, "--task", task, "--input",
                             json.dumps(data), "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True) for name, task, data in asks]
if os.environ.get("DETACH"):
    while not all(any(line.startswith(f"run {name} ") for line in
                      Path(log).read_text(encoding="utf-8").splitlines())
                  for name, _, _ in asks):
        time.sleep(0.05)
    write("detached")
    write(f"end {agent}")
    sys.exit(0)
texts = []
for (name, _, _), proc in zip(asks, running, strict=True):
    out, err = proc.communicate()
    text = json.loads(out)["text"].strip() if proc.returncode == 0 else ""
    texts.append(text)
    # --json: an error is {"error": {"code", "message", "hint"}} on stdout
    last = json.loads(out)["error"]["message"] if proc.returncode and out.strip() else (
        err.strip().splitlines() or [""])[-1]
    write(f"delegate {name} {proc.returncode} {text} | {last}")
expected = json.loads(os.environ.get("EXPECT", "null"))
if expected is not None:
    for (name, _, _), text, want in zip(asks, texts, expected, strict=True):
        if text != want:
            write(f"wrong answer from {name}")
            print(f"wrong answer from {name}: {text!r}, not {want!r}", file=sys.stderr)
            sys.exit(5)
for name, data in json.loads(os.environ.get("ACTIONS", "[]")):
    done = subprocess.run(["bees", "action", name, "--input", json.dumps(data)],
                          capture_output=True, text=True, check=False)
    write(f"{name} {done.returncode}")
if os.environ.get("FAIL"):
    print("no sources", file=sys.stderr)
    sys.exit(4)
if piece != "-" and os.environ.get("HOLD") and Path(os.environ["HOLD"]).exists():
    write(f"holding {agent} {piece}")
    while Path(os.environ["HOLD"]).exists():
        time.sleep(0.05)
if piece != "-":
    task = os.environ["BEES_TASK"]
    Path(f"{agent}.md").write_text(f"{task} {os.environ['BEES_PIECE_INPUT']}\n",
                                   encoding="utf-8")
    print(f"{agent} found: {task}")
elif asks:
    Path("draft.md").write_text("\n".join(texts) + "\n", encoding="utf-8")
write(f"end {agent}")
