"""The command runner hands over why a stage failed as a code and its values (issue 24,
point 3: reasons at the source), the same words as its sentence, so no one parses it back."""

from __future__ import annotations

import json
from pathlib import Path

from bees_cli.agents.runner import StageResult, run_command_stage
from bees_cli.why import Reason
from tests.agents.test_runner import make_request, no_beat


async def test_a_non_zero_exit_hands_its_code_and_stderr_tail(tmp_path: Path) -> None:
    script = "import sys\nprint('no key for the mail add-on', file=sys.stderr)\nsys.exit(3)\n"
    result = await run_command_stage(make_request(tmp_path, script), heartbeat=no_beat)

    assert result.why == Reason(code="agent_exit", exit_code=3,
                                said="no key for the mail add-on")
    assert result.why.words() == result.reason == "exit 3: no key for the mail add-on"
    assert StageResult.from_json(json.loads(json.dumps(result.to_json()))) == result


async def test_a_failure_with_no_code_of_its_own_hands_its_words_as_other(
        tmp_path: Path) -> None:
    silent = await run_command_stage(make_request(tmp_path, "raise SystemExit(4)\n"),
                                     heartbeat=no_beat)
    assert silent.why == Reason(code="other", text="exit 4 (nothing on stderr)")
    missing = await run_command_stage(
        make_request(tmp_path, "", command=["/nonexistent/agent-program"]), heartbeat=no_beat)
    assert missing.why == Reason(code="other",
                                 text="cannot start /nonexistent/agent-program: not found")
    done = await run_command_stage(make_request(tmp_path, "pass\n"), heartbeat=no_beat)
    assert (done.ok, done.why) == (True, None)
