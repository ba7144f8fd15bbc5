"""Starts the box: moto's server in this process with Stepline's patches
(patches.py), JSONata through the reference jsonata@2.0.6 in a Node
process (jsonata_bridge.py), and Lambda functions run by pools of Runtime
Interface Emulators (lambdas.py).

    python3 e2e/box/launcher.py --logs e2e/logs [--port N] [--rie bin/aws-lambda-rie]
                                [--node node] [--jsonata node_modules/jsonata] [--emulators 8]

When the box is ready it prints one JSON line on stdout: {"endpoint",
"pid", "moto", "jsonata", "patches"}. It stops, and stops everything it
started (the Node process and every emulator, by PID), when its standard
input closes (the process that started it went away) or on SIGTERM or
SIGINT. Its children are also told to die with it (PR_SET_PDEATHSIG).

Logs, for debugging a failing scenario:

    <logs>/box.log               every request moto served, the patches, the
                                 emulators started and each invocation's time
    <logs>/jsonata.log           the Node process's errors
    <logs>/lambda/<fn>-<n>.log   each emulator: the function's own JSON logs
    <logs>/functions/            the unpacked deployment packages

Region us-east-1, account 123456789012 (moto's default), any credentials.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import os
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

REGION = "us-east-1"


def die_with_parent() -> None:
    """preexec_fn for children: SIGKILL when the launcher dies (Linux)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="Start Stepline's AWS box (moto with the project's patches).")
    ap.add_argument("--logs", required=True, help="directory for the box's and the emulators' logs")
    ap.add_argument("--port", type=int, default=0, help="port of the AWS endpoint (default: a free one)")
    ap.add_argument("--rie", default="bin/aws-lambda-rie", help="the Lambda Runtime Interface Emulator")
    ap.add_argument("--node", default="node", help="Node.js")
    ap.add_argument("--jsonata", default="node_modules/jsonata", help="the jsonata@2.0.6 package directory")
    ap.add_argument("--emulators", type=int, default=8, help="emulators per function, at most")
    args = ap.parse_args(argv)

    os.makedirs(args.logs, exist_ok=True)
    logging.basicConfig(
        filename=os.path.join(args.logs, "box.log"),
        level=logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    log = logging.getLogger("box")

    for what, path in (("the Runtime Interface Emulator", args.rie), ("jsonata", args.jsonata)):
        if not os.path.exists(path):
            print(f"launcher: {what} is not at {path} (make tools installs it)", file=sys.stderr)
            return 2

    port = args.port
    if port == 0:
        from lambdas import free_port

        port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    # moto's interpreter calls the server's own API at localhost:$MOTO_PORT.
    os.environ["MOTO_PORT"] = str(port)
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "box")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "box")

    import moto

    from jsonata_bridge import NodeJSONata
    from lambdas import Pools
    from patches import Deps, PatchError, apply_all

    jsonata_log = open(os.path.join(args.logs, "jsonata.log"), "ab")
    evaluator = NodeJSONata(args.node, os.path.abspath(args.jsonata), jsonata_log, preexec=die_with_parent)
    pools = Pools(
        os.path.abspath(args.rie),
        os.path.join(os.path.abspath(args.logs), "functions"),
        os.path.abspath(args.logs),
        endpoint,
        REGION,
        size=args.emulators,
        preexec=die_with_parent,
    )
    try:
        names = apply_all(Deps(eval_jsonata=evaluator.eval, invoke_lambda=pools.invoke))
        evaluator.start()
    except PatchError as err:
        print(f"launcher: {err}", file=sys.stderr)
        return 3
    except Exception as err:  # noqa: BLE001 - reported, then exit
        print(f"launcher: {err}", file=sys.stderr)
        return 1
    log.info("moto %s, patches applied: %s; jsonata %s (pid %s)", moto.__version__, ", ".join(names), evaluator.version, evaluator.pid)

    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    log.info("serving on %s", endpoint)

    stopping = threading.Event()

    def stop(*_: object) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def watch_stdin() -> None:
        # The starter holds our stdin open: EOF means it went away.
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except OSError:
            pass
        stopping.set()

    threading.Thread(target=watch_stdin, daemon=True).start()

    print(
        json.dumps(
            {"endpoint": endpoint, "pid": os.getpid(), "moto": moto.__version__, "jsonata": evaluator.version, "patches": names}
        ),
        flush=True,
    )

    while not stopping.wait(1.0):
        pass
    started = time.monotonic()
    log.info("stopping: emulators %s, jsonata pid %s, %d evaluations", pools.pids(), evaluator.pid, evaluator.evaluations)
    log.info("functions: %s", json.dumps(pools.stats()))
    pools.close()
    evaluator.close()
    try:
        server.stop()
    except Exception:  # noqa: BLE001 - the process is ending anyway
        pass
    log.info("stopped in %.2f s", time.monotonic() - started)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    # Executions still waiting (a task token nobody sends) run on threads
    # that would hold the process open.
    os._exit(code)
