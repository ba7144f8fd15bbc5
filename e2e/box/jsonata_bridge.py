"""JSONata for moto's interpreter: expressions evaluated by the reference
jsonata@2.0.6 in one long-lived Node process (jsonata.js beside this file),
one JSON line per request and per answer."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from typing import Any, Callable, IO

# An expression that takes longer than this is an error (and the Node
# process is replaced): a JSONata expression over a state's data is
# milliseconds of work.
EVAL_TIMEOUT_SECONDS = 10.0

# The longest answer read from Node. moto writes every variable into every
# expression, so an answer is at most a few state payloads (256 KiB each).
MAX_ANSWER_BYTES = 64 << 20


class BridgeError(Exception):
    """The evaluator process failed (not a JSONata error)."""


class NodeJSONata:
    """Evaluates JSONata expressions in a Node process. Thread-safe:
    evaluations are serialised (each takes well under a millisecond)."""

    def __init__(self, node: str, jsonata_dir: str, log: IO[bytes], preexec: Callable[[], None] | None = None):
        self._cmd = [node, os.path.join(os.path.dirname(os.path.abspath(__file__)), "jsonata.js"), jsonata_dir]
        self._log = log
        self._preexec = preexec
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._answers: queue.Queue[bytes] = queue.Queue()
        self._next_id = 0
        self.version = ""
        self.evaluations = 0

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> None:
        with self._lock:
            self._start()

    def _start(self) -> None:
        self._proc = subprocess.Popen(
            self._cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, preexec_fn=self._preexec
        )
        self._answers = queue.Queue()
        threading.Thread(target=self._reader, args=(self._proc.stdout, self._answers), daemon=True).start()
        hello = self._answer(EVAL_TIMEOUT_SECONDS)
        if not hello.get("ready"):
            raise BridgeError(f"jsonata.js did not start: {hello}")
        self.version = hello.get("jsonata", "")

    @staticmethod
    def _reader(stdout: IO[bytes], answers: "queue.Queue[bytes]") -> None:
        # One reader per process: each line is an answer; b"" marks the end.
        while True:
            line = stdout.readline(MAX_ANSWER_BYTES)
            answers.put(line)
            if not line.endswith(b"\n"):
                return

    def _answer(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            self._kill()
            raise BridgeError(f"no answer from jsonata.js within {timeout:.0f} s") from None
        if not line.endswith(b"\n"):
            self._kill()
            raise BridgeError("jsonata.js exited, or sent an answer over the size limit")
        return json.loads(line)

    def _kill(self) -> None:
        if self._proc:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def eval(self, expression: str) -> Any:
        """Returns the expression's value (None for undefined, as moto's
        JVM bridge did); a JSONata error raises moto's JSONataException
        with the error code."""
        from moto.stepfunctions.parser.asl.jsonata.jsonata import JSONataException

        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            assert self._proc and self._proc.stdin
            self._next_id += 1
            rid = self._next_id
            try:
                self._proc.stdin.write(json.dumps({"id": rid, "expr": expression}).encode() + b"\n")
                self._proc.stdin.flush()
            except OSError as err:
                self._kill()
                raise BridgeError(f"jsonata.js is gone: {err}") from None
            answer = self._answer(EVAL_TIMEOUT_SECONDS)
            self.evaluations += 1
        if answer.get("id") != rid:
            raise BridgeError(f"jsonata.js answered request {answer.get('id')} to request {rid}")
        if not answer.get("ok"):
            raise JSONataException(answer.get("code", "UNKNOWN"), answer.get("message"))
        if answer.get("undefined"):
            return None
        return answer.get("value")

    def close(self) -> None:
        with self._lock:
            if self._proc:
                try:
                    self._proc.stdin.close()  # type: ignore[union-attr]
                    self._proc.wait(timeout=2)
                except (OSError, subprocess.TimeoutExpired):
                    pass
                self._kill()
