// Package asl is a typed model of the Amazon States Language (ASL) in its
// JSONata flavour: the state machines the compiler emits, the infra stack
// deploys to AWS Step Functions and the local engine interprets.
//
// A definition is a [StateMachine] whose [States] keep the order states were
// added in; [Marshal] writes it as indented JSON with states in that order
// and every state's fields in a fixed order ("Type" first), so one machine
// always yields the same bytes and golden files stay stable. [Parse] reads a
// definition (keeping the document's state order), rejects unknown fields and
// validates it; errors name the state they are about, as in
//
//	state "Notify": Next "Done" does not exist
//
// [Decode] reads a definition without the checks. Text written as Marshal
// writes it is read by hand in one pass; anything else, and any text with
// an error, is read by encoding/json, so both give the same values and
// the same messages.
//
// [StateMachine.Check] returns every finding including warnings (a Choice
// without Default that can fall through), [StateMachine.Validate] only the
// errors, as an [ErrorList].
//
// Values of Arguments, Output, Assign, Items, ItemSelector and Credentials are
// arbitrary JSON (any); every string of the form "{% expr %}" in them, also
// nested in objects and arrays, is a JSONata expression. Build such strings
// with [Expr] and string literals inside them with [Quote]; embed static
// text with [Literal] (static data with [LiteralValue]), which leaves plain
// text as it is and writes any other string (one that begins with "{%" or
// ends with "%}", is empty, or holds a line break) as an expression that
// evaluates to it, so that Step Functions never evaluates text and the
// pinned asl-validator accepts every string. Numeric fields that may be
// computed (TimeoutSeconds, HeartbeatSeconds, Seconds, MaxConcurrency) hold
// a number or a JSONata string.
//
// Only JSONata definitions are modelled: the JSONPath fields (InputPath,
// Parameters, ResultSelector, ResultPath, OutputPath, the Choice comparison
// operators) are rejected as unknown, as are the distributed-Map fields
// (ItemReader, ItemBatcher, ResultWriter, ToleratedFailure*). The top-level
// "Version" field is accepted and dropped.
package asl
