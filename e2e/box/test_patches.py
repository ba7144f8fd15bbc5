"""Smoke tests of the box's patches to moto (patches.py): each test runs a
small state machine (or stack) on moto's server in this process, with
every patch applied, and checks the behaviour its patch gives. A moto
whose patched code changed fails before any test, in setUpModule, naming
the patch (see patches.Target).

    python3 e2e/box/test_patches.py        (make e2e runs it first)

Needs moto 5.2.1 with its server extras, boto3, Node and the jsonata
package (node_modules/jsonata, or $STEPLINE_JSONATA).
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
import time
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from lambdas import free_port  # noqa: E402

PORT = free_port()
os.environ["MOTO_PORT"] = str(PORT)
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "box")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "box")

import boto3  # noqa: E402

import patches  # noqa: E402
from jsonata_bridge import NodeJSONata  # noqa: E402

ROLE = "arn:aws:iam::123456789012:role/box"
ENDPOINT = f"http://127.0.0.1:{PORT}"

# What the fake Lambda backend was asked, and answers in order.
INVOCATIONS: list[tuple[str, dict]] = []
ANSWERS: list[tuple[bytes, str]] = []

_server = None
_evaluator = None


def fake_invoke(fn, payload: bytes) -> tuple[bytes, str]:
    INVOCATIONS.append((fn.function_name, json.loads(payload)))
    if ANSWERS:
        return ANSWERS.pop(0)
    return json.dumps({"echo": json.loads(payload)}).encode(), ""


def setUpModule() -> None:
    global _server, _evaluator
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    jsonata = os.environ.get("STEPLINE_JSONATA", os.path.join(ROOT, "node_modules", "jsonata"))
    _evaluator = NodeJSONata(os.environ.get("STEPLINE_NODE", "node"), jsonata, open(os.devnull, "wb"))
    patches.apply_all(patches.Deps(eval_jsonata=_evaluator.eval, invoke_lambda=fake_invoke))
    _evaluator.start()
    from moto.server import ThreadedMotoServer

    _server = ThreadedMotoServer(ip_address="127.0.0.1", port=PORT, verbose=False)
    _server.start()


def tearDownModule() -> None:
    if _evaluator:
        _evaluator.close()


def client(service: str):
    return boto3.client(service, endpoint_url=ENDPOINT, region_name="us-east-1")


def machine(definition: dict, name: str | None = None) -> str:
    name = name or f"m{time.time_ns()}"
    return client("stepfunctions").create_state_machine(name=name, definition=json.dumps(definition), roleArn=ROLE)["stateMachineArn"]


def run(arn: str, payload: object = None, name: str | None = None) -> dict:
    sfn = client("stepfunctions")
    kwargs = {"stateMachineArn": arn, "input": json.dumps(payload if payload is not None else {})}
    if name:
        kwargs["name"] = name
    execution = sfn.start_execution(**kwargs)["executionArn"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        out = sfn.describe_execution(executionArn=execution)
        if out["status"] != "RUNNING":
            return out
        time.sleep(0.02)
    raise AssertionError(f"{execution} still running after 20 s")


def jsonata(states: dict, start: str) -> dict:
    return {"QueryLanguage": "JSONata", "StartAt": start, "States": states}


TRICKY = 'say "hi"\\ there\nline two {% not an expression %} \u2028 ✓'


class Patches(unittest.TestCase):
    def test_version_pinned(self) -> None:
        import moto

        self.assertEqual(moto.__version__, patches.MOTO_VERSION)

    def test_changed_code_is_refused(self) -> None:
        t = patches.Target("moto.stepfunctions.responses", "get_backend", "0" * 64)
        with self.assertRaisesRegex(patches.PatchError, r"patch p: moto.stepfunctions.responses.get_backend is not the code"):
            t.check("p")
        with self.assertRaisesRegex(patches.PatchError, r"patch p: moto has no moto.stepfunctions.responses.nothing"):
            patches.Target("moto.stepfunctions.responses", "nothing", "0").check("p")

    def test_execute_state_machines_and_jsonata_eval(self) -> None:
        out = run(machine(jsonata({"A": {"Type": "Pass", "Output": {"sum": "{% 1 + $states.input.n %}", "undefined": "{% $exists($nothing) %}"}, "End": True}}, "A")), {"n": 41})
        self.assertEqual(out["status"], "SUCCEEDED")
        self.assertEqual(json.loads(out["output"]), {"sum": 42, "undefined": False})

    def test_jsonata_errors_fail_the_state(self) -> None:
        out = run(machine(jsonata({"A": {"Type": "Pass", "Output": "{% $number('x') %}", "End": True}}, "A")))
        # Step Functions names this error States.QueryEvaluationError; moto
        # reports States.Runtime (a known difference, see e2e/doc.go).
        self.assertEqual((out["status"], out["error"]), ("FAILED", "States.Runtime"))
        self.assertIn("D3030", out["cause"])

    def test_jsonata_string_variables(self) -> None:
        # A string computed into a variable, then read in another expression.
        d = jsonata(
            {
                "A": {"Type": "Pass", "Assign": {"s": "{% $states.input.s %}"}, "Next": "B"},
                "B": {"Type": "Pass", "Output": {"s": "{% $s %}", "len": "{% $length($s) %}"}, "End": True},
            },
            "A",
        )
        out = run(machine(d), {"s": TRICKY})
        self.assertEqual(out["status"], "SUCCEEDED", out.get("cause"))
        self.assertEqual(json.loads(out["output"]), {"s": TRICKY, "len": len(TRICKY)})

    def test_assign_literal_strings(self) -> None:
        d = jsonata(
            {
                "A": {"Type": "Pass", "Assign": {"s": 'a"b\\c', "o": {"t": 'x"y'}}, "Next": "B"},
                "B": {"Type": "Pass", "Output": {"s": "{% $s %}", "t": "{% $o.t %}"}, "End": True},
            },
            "A",
        )
        out = run(machine(d))
        self.assertEqual(json.loads(out["output"]), {"s": 'a"b\\c', "t": 'x"y'})

    def test_second_execution_of_a_machine(self) -> None:
        arn = machine(jsonata({"A": {"Type": "Pass", "Output": "{% $states.input %}", "End": True}}, "A"))
        for i in range(3):
            out = run(arn, {"i": i})
            self.assertEqual((out["status"], json.loads(out["output"])), ("SUCCEEDED", {"i": i}))

    def test_lambda_to_emulators(self) -> None:
        lam = client("lambda")
        role = client("iam").create_role(RoleName="box", AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}],
        }))["Role"]["Arn"]
        package = io.BytesIO()
        with zipfile.ZipFile(package, "w") as z:
            z.writestr("bootstrap", "#!/bin/sh\n")
        fn = lam.create_function(
            FunctionName="echo", Runtime="provided.al2023", Role=role, Handler="bootstrap", Code={"ZipFile": package.getvalue()}
        )["FunctionArn"]
        d = jsonata(
            {
                "Call": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::lambda:invoke",
                    "Arguments": {"FunctionName": fn, "Payload": {"n": "{% $states.input.n %}"}},
                    "Output": "{% $states.result.Payload %}",
                    "Retry": [{"ErrorEquals": ["ExecutorUnavailable"], "IntervalSeconds": 1, "MaxAttempts": 1, "BackoffRate": 1}],
                    "Catch": [{"ErrorEquals": ["States.ALL"], "Output": "{% $states.errorOutput %}", "Next": "Caught"}],
                    "End": True,
                },
                "Caught": {"Type": "Pass", "End": True},
            },
            "Call",
        )
        arn = machine(d)
        INVOCATIONS.clear()
        ANSWERS[:] = [
            (b'{"errorType": "ExecutorUnavailable", "errorMessage": "HTTP 503"}', "ExecutorUnavailable"),
            (b'{"status": "completed"}', ""),
        ]
        out = run(arn, {"n": 7})
        self.assertEqual((out["status"], json.loads(out["output"])), ("SUCCEEDED", {"status": "completed"}))
        self.assertEqual(INVOCATIONS, [("echo", {"n": 7}), ("echo", {"n": 7})])
        # An error the Task does not retry is caught under its own name.
        ANSWERS[:] = [(b'{"errorType": "ConfigError", "errorMessage": "no key"}', "ConfigError")]
        out = run(arn, {"n": 8})
        self.assertEqual(json.loads(out["output"])["Error"], "ConfigError")

    def test_sync2_child_execution(self) -> None:
        child = machine(jsonata({"C": {"Type": "Pass", "Output": {"got": "{% $states.input.x %}", "name": "{% $states.context.Execution.Name %}"}, "End": True}}, "C"))
        parent = machine(
            jsonata(
                {
                    "Start child": {
                        "Type": "Task",
                        "Resource": "arn:aws:states:::states:startExecution.sync:2",
                        "Arguments": {"StateMachineArn": child, "Input": {"x": "{% $states.input.x %}"}},
                        "Output": {"status": "{% $states.result.Status %}", "output": "{% $states.result.Output %}"},
                        "End": True,
                    }
                },
                "Start child",
            )
        )
        out = run(parent, {"x": TRICKY})
        self.assertEqual(out["status"], "SUCCEEDED", out.get("cause"))
        got = json.loads(out["output"])
        self.assertEqual(got["status"], "SUCCEEDED")
        self.assertEqual(got["output"]["got"], TRICKY)
        self.assertRegex(got["output"]["name"], r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

    def test_send_task_failure_cause(self) -> None:
        sfn = client("stepfunctions")
        d = jsonata(
            {
                "Wait": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                    "Arguments": {"QueueUrl": "{% $states.input.queue %}", "MessageBody": "{% $states.context.Task.Token %}"},
                    "Catch": [{"ErrorEquals": ["States.ALL"], "Output": "{% $states.errorOutput %}", "Next": "Caught"}],
                    "End": True,
                },
                "Caught": {"Type": "Pass", "End": True},
            },
            "Wait",
        )
        queue = client("sqs").create_queue(QueueName="tokens")["QueueUrl"]
        execution = sfn.start_execution(stateMachineArn=machine(d), input=json.dumps({"queue": queue}))["executionArn"]
        token = None
        for _ in range(200):
            got = client("sqs").receive_message(QueueUrl=queue, WaitTimeSeconds=0).get("Messages", [])
            if got:
                token = got[0]["Body"]
                break
            time.sleep(0.02)
        self.assertIsNotNone(token, "no task token was sent")
        sfn.send_task_failure(taskToken=token, error="Approval.Cancelled", cause="withdrawn by the operator")
        for _ in range(200):
            out = sfn.describe_execution(executionArn=execution)
            if out["status"] != "RUNNING":
                break
            time.sleep(0.02)
        self.assertEqual(json.loads(out["output"]), {"Error": "Approval.Cancelled", "Cause": "withdrawn by the operator"})

    def test_test_event_pattern(self) -> None:
        events = client("events")
        pattern = json.dumps({"source": ["alertmanager"], "detail": {"fingerprint": [{"anything-but": ""}], "pipeline": ["", {"exists": False}]}})
        cases = {
            "matches": ({"fingerprint": "fp-1"}, True),
            "empty fingerprint": ({"fingerprint": ""}, False),
            "names a pipeline": ({"fingerprint": "fp-1", "pipeline": "x"}, False),
        }
        for name, (detail, want) in cases.items():
            with self.subTest(name):
                event = {"id": "1", "source": "alertmanager", "detail-type": "Stepline Trigger", "account": "123456789012",
                         "region": "us-east-1", "time": "2026-01-01T00:00:00Z", "resources": [], "detail": detail}
                got = events.test_event_pattern(EventPattern=pattern, Event=json.dumps(event))["Result"]
                self.assertEqual(got, want)

    def test_cloudformation_state_machines(self) -> None:
        template = {
            "Resources": {
                "Machine": {
                    "Type": "AWS::StepFunctions::StateMachine",
                    "Properties": {
                        "StateMachineName": "from-cfn",
                        "RoleArn": ROLE,
                        "DefinitionString": json.dumps(jsonata({"A": {"Type": "Pass", "Output": {"v": "${Value}", "other": "${Unknown}"}, "End": True}}, "A")),
                        "DefinitionSubstitutions": {"Value": {"Fn::Join": ["-", ["sub", "stituted"]]}},
                    },
                }
            }
        }
        cfn = client("cloudformation")
        cfn.create_stack(StackName="machines", TemplateBody=json.dumps(template))
        arn = cfn.describe_stack_resources(StackName="machines")["StackResources"][0]["PhysicalResourceId"]
        out = run(arn)
        self.assertEqual(out["status"], "SUCCEEDED", out.get("cause"))
        self.assertEqual(json.loads(out["output"]), {"v": "sub-stituted", "other": "${Unknown}"})

    def test_substitute(self) -> None:
        cases = {
            "plain": ("no placeholders", {}, "no placeholders"),
            "one": ("${A}", {"A": "x"}, "x"),
            "unknown kept": ("${A}${B}", {"A": "x"}, "x${B}"),
            "escaped kept": ("$\\u007bA}", {"A": "x"}, "$\\u007bA}"),
        }
        for name, (definition, subs, want) in cases.items():
            with self.subTest(name):
                self.assertEqual(patches.substitute(definition, subs), want)


if __name__ == "__main__":
    unittest.main(verbosity=2)
