"""Lambda functions of the box: each function's own deployment package run
under the AWS Lambda Runtime Interface Emulator, in pools.

A function's zip (as created with CreateFunction, or from S3 by
CloudFormation) is unpacked once into <work>/<name>-<sha>/ and run there,
as /var/task on Lambda. An emulator takes one invocation at a time, so
each function has a pool: an idle emulator takes the next invocation, a
new one is started while the pool is below its size, and beyond that an
invocation waits for one to free up. A pool is keyed by the function's
ARN, code hash and environment, so a function updated in the box gets
fresh emulators.

Every emulator writes its output (the emulator's lines and the function's
own logs) to <logs>/lambda/<function>-<n>.log.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import socket
import stat
import subprocess
import threading
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass, field
from typing import Any, Callable

LOG = logging.getLogger("box.lambda")

# How long an emulator may take to listen after it starts.
START_TIMEOUT_SECONDS = 20.0
# How long an invocation waits for a free emulator of a full pool.
ACQUIRE_TIMEOUT_SECONDS = 300.0
# The Lambda service fault an invocation the box could not carry out
# reports: compiled Tasks retry it as they retry Lambda's own faults.
SERVICE_FAULT = "Lambda.ServiceException"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Emulator:
    proc: subprocess.Popen[bytes]
    url: str
    log_path: str


@dataclass
class Pool:
    name: str
    task_dir: str
    env: dict[str, str]
    timeout: float
    idle: list[Emulator] = field(default_factory=list)
    all: list[Emulator] = field(default_factory=list)
    starting: int = 0
    invocations: int = 0


class Pools:
    def __init__(
        self,
        rie: str,
        work_dir: str,
        log_dir: str,
        endpoint: str,
        region: str,
        size: int = 8,
        preexec: Callable[[], None] | None = None,
    ):
        self.rie = rie
        self.work_dir = work_dir
        self.log_dir = os.path.join(log_dir, "lambda")
        self.endpoint = endpoint
        self.region = region
        self.size = size
        self.preexec = preexec
        self._lock = threading.Condition()
        self._pools: dict[str, Pool] = {}
        self._closed = False
        # Emulators are started by one long-lived thread: a child's
        # PR_SET_PDEATHSIG fires when the thread that started it ends, and
        # invocations run on the server's short-lived request threads.
        self._spawns: "queue.Queue[tuple[list[str], dict[str, Any], queue.Queue[Any]]]" = queue.Queue()
        threading.Thread(target=self._spawner, name="emulator-spawner", daemon=True).start()
        os.makedirs(self.work_dir, exist_ok=True)
        os.makedirs(self.log_dir, exist_ok=True)

    # --- pools -----------------------------------------------------------

    def _key(self, fn: Any) -> str:
        env = json.dumps(fn.environment_vars or {}, sort_keys=True)
        return f"{fn.function_arn}|{fn.code_sha_256}|{hashlib.sha256(env.encode()).hexdigest()}"

    def _pool(self, fn: Any) -> Pool:
        key = self._key(fn)
        with self._lock:
            pool = self._pools.get(key)
        if pool is not None:
            return pool
        task_dir = self._unpack(fn)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LAMBDA_TASK_ROOT": task_dir,
            "_HANDLER": fn.handler or "bootstrap",
            "AWS_LAMBDA_FUNCTION_NAME": fn.function_name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(fn.memory_size),
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(fn.timeout),
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{fn.function_name}",
        }
        env.update({k: str(v) for k, v in (fn.environment_vars or {}).items()})
        # What Lambda reserves for itself: the region and the execution
        # role's credentials; the box adds its endpoint.
        env.update(
            {
                "AWS_REGION": self.region,
                "AWS_DEFAULT_REGION": self.region,
                "AWS_ACCESS_KEY_ID": "box",
                "AWS_SECRET_ACCESS_KEY": "box",
                "AWS_ENDPOINT_URL": self.endpoint,
            }
        )
        pool = Pool(name=fn.function_name, task_dir=task_dir, env=env, timeout=float(fn.timeout))
        with self._lock:
            return self._pools.setdefault(key, pool)

    def _unpack(self, fn: Any) -> str:
        code: bytes = getattr(fn, "code_bytes", b"") or b""
        if not code:
            raise RuntimeError(f"function {fn.function_name} has no zip package (images are not supported)")
        task_dir = os.path.join(self.work_dir, f"{fn.function_name}-{fn.code_sha_256[:16].replace('/', '_')}")
        if os.path.isdir(task_dir):
            return task_dir
        tmp = task_dir + f".tmp{os.getpid()}.{threading.get_ident()}"
        import io

        with zipfile.ZipFile(io.BytesIO(code)) as z:
            for info in z.infolist():
                path = z.extract(info, tmp)
                mode = (info.external_attr >> 16) & 0o777
                if info.filename in ("bootstrap", fn.handler):
                    mode |= 0o755
                if mode and not info.is_dir():
                    os.chmod(path, mode)
        boot = os.path.join(tmp, "bootstrap")
        if not os.path.isfile(boot):
            raise RuntimeError(f"function {fn.function_name}: the package has no bootstrap at its root")
        os.chmod(boot, os.stat(boot).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        try:
            os.rename(tmp, task_dir)
        except OSError:
            pass  # another invocation unpacked it first
        return task_dir

    # --- emulators -------------------------------------------------------

    def _spawner(self) -> None:
        while True:
            args, kwargs, answer = self._spawns.get()
            try:
                answer.put(subprocess.Popen(args, **kwargs))
            except Exception as err:  # noqa: BLE001 - handed to the caller
                answer.put(err)

    def _popen(self, args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        answer: queue.Queue[Any] = queue.Queue()
        self._spawns.put((args, kwargs, answer))
        got = answer.get()
        if isinstance(got, Exception):
            raise got
        return got

    def _start(self, pool: Pool) -> Emulator:
        n = len(pool.all) + pool.starting
        log_path = os.path.join(self.log_dir, f"{pool.name}-{n}.log")
        last = ""
        for _ in range(3):  # a port found free can be taken before the emulator binds it
            port, api = free_port(), free_port()
            log = open(log_path, "ab")
            proc = self._popen(
                [
                    self.rie,
                    "--runtime-interface-emulator-address",
                    f"127.0.0.1:{port}",
                    "--runtime-api-address",
                    f"127.0.0.1:{api}",
                    os.path.join(pool.task_dir, "bootstrap"),
                ],
                cwd=pool.task_dir,
                env=pool.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=self.preexec,
            )
            log.close()
            if self._listening(proc, port):
                LOG.info("emulator for %s started: pid %d, port %d, log %s", pool.name, proc.pid, port, log_path)
                return Emulator(proc, f"http://127.0.0.1:{port}/2015-03-31/functions/function/invocations", log_path)
            last = f"exit status {proc.poll()}"
            self._stop(proc)
        raise RuntimeError(f"the emulator for {pool.name} did not start ({last}); see {log_path}")

    @staticmethod
    def _listening(proc: subprocess.Popen[bytes], port: int) -> bool:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    pass
                time.sleep(0.03)  # an emulator that lost the port is exiting now
                return proc.poll() is None
            except OSError:
                time.sleep(0.02)
        return False

    @staticmethod
    def _stop(proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _acquire(self, pool: Pool) -> Emulator:
        deadline = time.monotonic() + ACQUIRE_TIMEOUT_SECONDS
        with self._lock:
            while True:
                if self._closed:
                    raise RuntimeError("the box is stopping")
                if pool.idle:
                    return pool.idle.pop()
                if len(pool.all) + pool.starting < self.size:
                    pool.starting += 1
                    break
                if not self._lock.wait(timeout=max(deadline - time.monotonic(), 0)):
                    raise RuntimeError(f"no emulator of {pool.name} free within {ACQUIRE_TIMEOUT_SECONDS:.0f} s")
        try:
            e = self._start(pool)
        finally:
            with self._lock:
                pool.starting -= 1
        with self._lock:
            pool.all.append(e)
        return e

    def _release(self, pool: Pool, e: Emulator, healthy: bool) -> None:
        with self._lock:
            if healthy and not self._closed:
                pool.idle.append(e)
            else:
                pool.all.remove(e)
            self._lock.notify()
        if not healthy:
            self._stop(e.proc)

    # --- invoke ----------------------------------------------------------

    def invoke(self, fn: Any, payload: bytes) -> tuple[bytes, str]:
        """Runs one invocation: the answer's body and its errorType ("" when
        the function succeeded)."""
        try:
            pool = self._pool(fn)
            e = self._acquire(pool)
        except Exception as err:  # noqa: BLE001 - reported to the caller as Lambda would
            LOG.error("invoke %s: %s", fn.function_name, err)
            return self._fault(str(err))
        healthy = True
        started = time.monotonic()
        try:
            req = urllib.request.Request(e.url, data=payload, method="POST", headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=pool.timeout + 10) as resp:
                body = resp.read()
        except (urllib.error.URLError, OSError) as err:
            healthy = False
            LOG.error("invoke %s (pid %d): %s; see %s", pool.name, e.proc.pid, err, e.log_path)
            body, _ = self._fault(f"the emulator failed: {err}")
        finally:
            with self._lock:
                pool.invocations += 1
            self._release(pool, e, healthy and e.proc.poll() is None)
        error_type = ""
        try:
            answer = json.loads(body)
            if isinstance(answer, dict) and isinstance(answer.get("errorType"), str) and "errorMessage" in answer:
                error_type = answer["errorType"] or "Unhandled"
        except ValueError:
            pass
        LOG.info("invoke %s: %.1f ms%s", pool.name, (time.monotonic() - started) * 1000, f" ({error_type})" if error_type else "")
        return body, error_type

    @staticmethod
    def _fault(message: str) -> tuple[bytes, str]:
        return json.dumps({"errorType": SERVICE_FAULT, "errorMessage": message}).encode(), SERVICE_FAULT

    # --- lifecycle -------------------------------------------------------

    def pids(self) -> list[int]:
        with self._lock:
            return [e.proc.pid for p in self._pools.values() for e in p.all]

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {p.name + "#" + k[-8:]: {"emulators": len(p.all), "invocations": p.invocations} for k, p in self._pools.items()}

    def close(self) -> None:
        with self._lock:
            self._closed = True
            emulators = [e for p in self._pools.values() for e in p.all]
            self._lock.notify_all()
        # Signal every emulator first, then wait: each takes a moment to exit.
        for e in emulators:
            if e.proc.poll() is None:
                e.proc.terminate()
        for e in emulators:
            self._stop(e.proc)
