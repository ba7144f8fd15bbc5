"""Stepline's patches to moto 5.2.1, so that its Step Functions interpreter
(the LocalStack one moto vendors) runs compiled Stepline state machines.

Each patch is small and named, and names the moto code it replaces with a
hash of that code's source. apply_all refuses to patch a moto whose
version or patched code differs from the ones the patches were written
for: an upgrade fails loudly, naming the patch to re-check, rather than
running the tier on an interpreter that behaves in some new way.
test_patches.py checks the behaviour each patch gives.

The patches, as the lab proof (shared/lab/aws-box) found them:

  execute-state-machines     moto only executes state machines when its
                             stepfunctions.execute_state_machine setting is on
  jsonata-eval               moto 5.2.1 ships its JSONata evaluator stubbed out
                             (None): expressions go to the reference jsonata@2.0.6
  jsonata-string-variables   string variables are pasted into expressions
                             between quotes, unescaped: encode them as JSON
  lambda-to-emulators        lambda:invoke runs the function's own zip under the
                             Runtime Interface Emulator (pools, see lambdas.py),
                             not in Docker
  state-machine-deepcopy     StartExecution deep-copies the state machine with
                             its earlier executions (threads, locks): leave them out
  sfn-sync2-casing           states:startExecution.sync:2 sends Input, not input,
                             to the API: map names through botocore's shapes
  child-execution-names      an execution started without a name is named None:
                             name it with a UUID, as Step Functions does
  cloudformation-state-machines
                             AWS::StepFunctions::StateMachine goes to a backend
                             that never executes and ignores DefinitionSubstitutions

and three the tier found:

  assign-literal-strings     a string literal in Assign keeps its JSON escapes
                             ("a\\"b" is stored as a, backslash, quote, b): decode it
                             as JSON, as every other literal is decoded
  send-task-failure-cause    SendTaskFailure drops its cause: pass it on
  test-event-pattern         EventBridge's TestEventPattern is not implemented: answer
                             it with moto's own rule matcher (the one PutEvents uses),
                             so the tier delivers events through the stack's rules by hand
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any, Callable

MOTO_VERSION = "5.2.1"


class PatchError(Exception):
    """A patch that cannot be applied to the moto installed."""


@dataclass(frozen=True)
class Target:
    """Moto code a patch replaces or relies on, with the sha256 of its
    source in the moto release the patch was written for."""

    module: str
    qualname: str
    sha256: str

    def resolve(self) -> Any:
        import importlib

        obj: Any = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            obj = getattr(obj, part)
        return obj

    def check(self, patch: str) -> None:
        try:
            obj = self.resolve()
        except (ImportError, AttributeError) as err:
            raise PatchError(f"patch {patch}: moto has no {self.module}.{self.qualname} ({err})") from None
        got = source_hash(obj)
        if got != self.sha256:
            raise PatchError(
                f"patch {patch}: {self.module}.{self.qualname} is not the code the patch was written for "
                f"(source sha256 {got[:12]}, want {self.sha256[:12]}): re-check the patch against this moto"
            )


def source_hash(obj: Any) -> str:
    return hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()


@dataclass(frozen=True)
class Patch:
    name: str
    why: str
    targets: tuple[Target, ...]
    apply: Callable[["Deps"], None]


@dataclass
class Deps:
    """What the patches call out to: a JSONata evaluator (expression →
    value, None for undefined; raises JSONataException) and the Lambda
    emulator pools (function, payload → (answer bytes, errorType or ""))."""

    eval_jsonata: Callable[[str], Any]
    invoke_lambda: Callable[[Any, bytes], tuple[bytes, str]]


M_JSONATA = "moto.stepfunctions.parser.asl.jsonata.jsonata"
M_STATES = "moto.stepfunctions.parser.asl.eval.states"
M_VARSTORE = "moto.stepfunctions.parser.asl.eval.variable_store"
M_SFN_MODELS = "moto.stepfunctions.models"
M_PARSER_MODELS = "moto.stepfunctions.parser.models"
M_TASK_SERVICE = "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service"
M_TASK_SFN = "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn"
M_LAMBDA = "moto.awslambda.models"
M_PREPROCESSOR = "moto.stepfunctions.parser.asl.parse.preprocessor"


# --- execute-state-machines -------------------------------------------------


def _execute_state_machines(_: Deps) -> None:
    from moto.core.config import default_user_config

    default_user_config.setdefault("stepfunctions", {})["execute_state_machine"] = True


# --- jsonata-eval -----------------------------------------------------------


def _jsonata_eval(deps: Deps) -> None:
    import importlib

    jsonata = importlib.import_module(M_JSONATA)
    # eval_jsonata_expression calls the module's _eval_jsonata, which 5.2.1
    # leaves None.
    jsonata._eval_jsonata = deps.eval_jsonata


# --- jsonata-string-variables -----------------------------------------------


def _encode_declarations(bindings: dict[str, Any]) -> str:
    # As moto's, with every value written as JSON: a string is a JSON
    # string literal, which JSONata reads the same way.
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

    return "".join(f"{ref}:={to_json_str(value, separators=(',', ':'))};" for ref, value in bindings.items())


def _jsonata_string_variables(_: Deps) -> None:
    import importlib

    # states.py and variable_store.py import the function by name.
    for module in (M_JSONATA, M_STATES, M_VARSTORE):
        setattr(importlib.import_module(module), "encode_jsonata_variable_declarations", _encode_declarations)


# --- lambda-to-emulators ----------------------------------------------------


def _lambda_to_emulators(deps: Deps) -> None:
    import base64
    import threading

    from moto.awslambda.models import LambdaFunction

    def invoke(self: Any, body: Any, request_headers: Any, response_headers: Any) -> bytes:
        payload = body.encode() if isinstance(body, str) else (body or b"")
        if not payload.strip():
            payload = b"{}"
        if request_headers.get("x-amz-invocation-type", "RequestResponse") == "Event":
            threading.Thread(target=deps.invoke_lambda, args=(self, payload), daemon=True).start()
            return b""
        answer, error_type = deps.invoke_lambda(self, payload)
        if error_type:
            # What Lambda says of a function that returned an error; the
            # interpreter reads the error's name from errorType in the body.
            response_headers["x-amz-function-error"] = "Unhandled"
        response_headers["x-amz-log-result"] = base64.b64encode(b"").decode()
        return answer

    LambdaFunction.invoke = invoke


# --- state-machine-deepcopy -------------------------------------------------


def _state_machine_deepcopy(_: Deps) -> None:
    from moto.stepfunctions.models import StateMachineInstance

    def deepcopy_without_executions(self: Any, memo: dict[int, Any]) -> Any:
        clone = self.__class__.__new__(self.__class__)
        memo[id(self)] = clone
        for key, value in self.__dict__.items():
            if key == "executions":
                value = []  # running executions hold threads and locks
            elif key == "backend":
                pass  # the account's backend, shared, as before the copy
            else:
                value = copy.deepcopy(value, memo)
            clone.__dict__[key] = value
        return clone

    StateMachineInstance.__deepcopy__ = deepcopy_without_executions


# --- sfn-sync2-casing -------------------------------------------------------


def _operation_model(service: str, snake_action: str) -> Any:
    import botocore.session

    from moto.stepfunctions.parser.utils import snake_to_camel_case

    return botocore.session.get_session().get_service_model(service).operation_model(snake_to_camel_case(snake_action))


def _sfn_sync2_casing(_: Deps) -> None:
    import importlib

    cls = importlib.import_module(M_TASK_SFN).StateTaskServiceSfn
    original = cls._normalise_parameters

    def normalise_parameters(self: Any, parameters: dict, boto_service_name: str | None = None, service_action_name: str | None = None) -> None:
        original(self, parameters, boto_service_name, service_action_name)
        op = _operation_model(self._get_boto_service_name(boto_service_name), self._get_boto_service_action(service_action_name))
        if op.input_shape is not None:
            self._to_boto_request(parameters, op.input_shape)

    def normalise_response(self: Any, response: Any, boto_service_name: str | None = None, service_action_name: str | None = None) -> None:
        op = _operation_model(self._get_boto_service_name(boto_service_name), self._get_boto_service_action(service_action_name))
        if op.output_shape is not None:
            self._from_boto_response(response, op.output_shape)

    cls._normalise_parameters = normalise_parameters
    cls._normalise_response = normalise_response


# --- child-execution-names --------------------------------------------------


def _child_execution_names(_: Deps) -> None:
    import importlib

    cls = importlib.import_module(M_PARSER_MODELS).StepFunctionsParserBackend
    original = cls.start_execution

    def start_execution(self: Any, state_machine_arn: str, name: Any = None, execution_input: Any = None, trace_header: Any = None) -> Any:
        return original(self, state_machine_arn, name or str(uuid.uuid4()), execution_input, trace_header)

    cls.start_execution = start_execution


# --- cloudformation-state-machines ------------------------------------------

_SUBSTITUTION = re.compile(r"\$\{([A-Za-z0-9_.:-]+)\}")


def substitute(definition: str, substitutions: dict[str, Any]) -> str:
    """Replaces ${Key} with the substitution named Key, as CloudFormation
    does with DefinitionSubstitutions; other ${...} stay as written."""

    def one(m: re.Match[str]) -> str:
        key = m.group(1)
        return str(substitutions[key]) if key in substitutions else m.group(0)

    return _SUBSTITUTION.sub(one, definition)


def _cloudformation_state_machines(_: Deps) -> None:
    from moto.stepfunctions.models import StateMachine
    from moto.stepfunctions.responses import get_backend
    from moto.stepfunctions.utils import cfn_to_api_tags

    def create(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any) -> Any:
        properties = cloudformation_json["Properties"]
        definition = properties.get("DefinitionString")
        if definition is None and "DefinitionBody" in properties:
            definition = json.dumps(properties["DefinitionBody"])
        definition = substitute(definition or "", properties.get("DefinitionSubstitutions") or {})
        backend = get_backend(account_id, region_name)  # the executing one
        return backend.create_state_machine(
            properties.get("StateMachineName", resource_name),
            definition,
            properties.get("RoleArn", ""),
            tags=cfn_to_api_tags(properties.get("Tags", [])),
        )

    def delete(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str) -> None:
        get_backend(account_id, region_name).delete_state_machine(resource_name)

    StateMachine.create_from_cloudformation_json = classmethod(create)
    StateMachine.delete_from_cloudformation_json = classmethod(delete)


# --- assign-literal-strings -------------------------------------------------


def _assign_literal_strings(_: Deps) -> None:
    import importlib

    from moto.stepfunctions.parser.asl.component.common.assign.assign_template_value_terminal import (
        AssignTemplateValueTerminalLit,
    )

    cls = importlib.import_module(M_PREPROCESSOR).Preprocessor

    def visit(self: Any, ctx: Any) -> Any:
        # The token is a JSON string literal, quotes included.
        return AssignTemplateValueTerminalLit(value=json.loads(ctx.string_literal().getText()))

    cls.visitAssign_template_value_terminal_string_literal = visit


# --- send-task-failure-cause ---------------------------------------------------


def _send_task_failure_cause(_: Deps) -> None:
    from moto.core.responses import EmptyResult
    from moto.stepfunctions.responses import StepFunctionResponse

    def send_task_failure(self: Any) -> Any:
        self.stepfunction_backend.send_task_failure(
            self._get_param("taskToken"), error=self._get_param("error"), cause=self._get_param("cause")
        )
        return EmptyResult()

    StepFunctionResponse.send_task_failure = send_task_failure


# --- test-event-pattern ----------------------------------------------------------


def _test_event_pattern(_: Deps) -> None:
    from moto.events.models import EventPattern
    from moto.events.responses import EventsHandler

    def test_event_pattern(self: Any) -> str:
        pattern = EventPattern.load(self._get_param("EventPattern"))
        return json.dumps({"Result": pattern.matches_event(json.loads(self._get_param("Event")))})

    EventsHandler.test_event_pattern = test_event_pattern


PATCHES: tuple[Patch, ...] = (
    Patch(
        "execute-state-machines",
        "moto runs executions only with stepfunctions.execute_state_machine on",
        (Target("moto.stepfunctions.responses", "get_backend", "e736380f7d9c98a50540b6b8e86c014eeb8c3beb66eefc05b2fa73796b0d1589"),),
        _execute_state_machines,
    ),
    Patch(
        "jsonata-eval",
        "moto 5.2.1 ships its JSONata bridge stubbed out",
        (Target(M_JSONATA, "eval_jsonata_expression", "696d324549c4e6993b199d922ad81096ab388611ac8c148a6ffae4f37d068a30"),),
        _jsonata_eval,
    ),
    Patch(
        "jsonata-string-variables",
        "string variables are written into expressions without JSON escaping",
        (Target(M_JSONATA, "encode_jsonata_variable_declarations", "c33b311faa45e2ff729bac31bf61434fafa21fb46f2493343d7df91c10d081fd"),),
        _jsonata_string_variables,
    ),
    Patch(
        "lambda-to-emulators",
        "moto runs Lambda code in Docker; the box runs it under the Runtime Interface Emulator",
        (Target(M_LAMBDA, "LambdaFunction.invoke", "dadc324f30aed38bf9dde5a93000c195ed3e5fb5e984f71ebd4c6629fc89aa2e"),),
        _lambda_to_emulators,
    ),
    Patch(
        "state-machine-deepcopy",
        "StartExecution deep-copies earlier executions (threads, locks): the second one fails",
        (Target(M_PARSER_MODELS, "StepFunctionsParserBackend.start_execution", "ad3444da70b972e24c832dbbce7fa593f6b2a23f36da3e05b9fc6bdf7ff0fa62"), Target(M_SFN_MODELS, "StateMachineInstance", "4299a1ea53d2c4c1d9e9641dcb8d7430653878138b249968db8e1bdb642bc043")),
        _state_machine_deepcopy,
    ),
    Patch(
        "sfn-sync2-casing",
        "startExecution.sync:2 parameters and answers are not mapped to the API's names",
        (
            Target(M_TASK_SERVICE, "StateTaskService._normalise_parameters", "dece59e76fd5e746d2c67f140a63bc1b25dad5dde3258c1794fa46894e6d07f9"),
            Target(M_TASK_SERVICE, "StateTaskService._normalise_response", "00e0b0a50b1dd4baea457d318dcc88928f27a633d3383c6224ae47c17eedbc87"),
            Target(M_TASK_SFN, "StateTaskServiceSfn._normalise_parameters", "d75d3da19aad01fb6166a22a30955b50a9c0f5c5da6707e492f9757c455bcb6c"),
        ),
        _sfn_sync2_casing,
    ),
    Patch(
        "child-execution-names",
        "an execution started without a name is named None",
        (Target(M_PARSER_MODELS, "StepFunctionsParserBackend.start_execution", "ad3444da70b972e24c832dbbce7fa593f6b2a23f36da3e05b9fc6bdf7ff0fa62"),),
        _child_execution_names,
    ),
    Patch(
        "cloudformation-state-machines",
        "CloudFormation state machines never execute and ignore DefinitionSubstitutions",
        (Target(M_SFN_MODELS, "StateMachine.create_from_cloudformation_json", "97e9fc1f9bd3ba26ace6f66e81c28f52368fac2e48927dea8f87d6378f33964a"),),
        _cloudformation_state_machines,
    ),
    Patch(
        "assign-literal-strings",
        "a string literal in Assign keeps its JSON escapes",
        (Target(M_PREPROCESSOR, "Preprocessor.visitAssign_template_value_terminal_string_literal", "f1a04d4713ef9f0f192ca878051e4a5a928e01f15b309da97640ff6e661ec8b2"),),
        _assign_literal_strings,
    ),
    Patch(
        "send-task-failure-cause",
        "SendTaskFailure drops its cause",
        (Target("moto.stepfunctions.responses", "StepFunctionResponse.send_task_failure", "f0fed5e805768377c3886da87839f8dc3ea37bdaa5a64bab13da2784b5e00304"),),
        _send_task_failure_cause,
    ),
    Patch(
        "test-event-pattern",
        "TestEventPattern is not implemented",
        (Target("moto.events.responses", "EventsHandler.test_event_pattern", "945d9dc74b3abdaa1ad8e3a5650796a935e6f817ae05bc48369cccb6709347ca"), Target("moto.events.models", "EventPattern", "37f2129e3cb2a8ebecd733dac298526bcf29ea7fbcf02da5111db700db853dca")),
        _test_event_pattern,
    ),
)


def check_version() -> None:
    import moto

    if moto.__version__ != MOTO_VERSION:
        raise PatchError(
            f"moto {moto.__version__} is installed; the box's patches are written for moto {MOTO_VERSION} "
            f"(pip install 'moto[server]=={MOTO_VERSION}', or re-check every patch in e2e/box/patches.py)"
        )


def apply_all(deps: Deps) -> list[str]:
    """Checks moto's version and every patch's targets, then applies the
    patches in order. Returns their names."""
    check_version()
    for p in PATCHES:
        for t in p.targets:
            t.check(p.name)
    for p in PATCHES:
        p.apply(deps)
    return [p.name for p in PATCHES]
