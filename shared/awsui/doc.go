// Package awsui serves the web UI (package webui) over a deployed stack:
// runs, steps and approvals from the stack's DynamoDB table, each run's
// log and graph from its Step Functions execution history, approvals
// decided through the run's task token with the callback function's code
// (package tasktoken), and each run linked to its execution's page in the
// Step Functions console. It runs no engine: `stepline serve --aws`
// browses what the stack ran.
//
// A run is the execution named by its ID on the state machine of its
// pipeline, <prefix>-<pipeline> (shared/awsenv.StateMachineName). The
// state machines are listed once (ListStateMachines, at most
// MaxStateMachines) and again when a run names one not seen yet, at most
// every RelistEvery; their definitions (DescribeStateMachine) give the
// pipelines page and the graphs. The stack's table and prefix come from
// its CloudFormation outputs (TableName, StateMachinePrefix) through
// [LookupStack].
//
// Approvals are decided as the callback function decides them: the
// decision recorded once in the table (DecideApproval's condition), then
// SendTaskSuccess with the approval's task token. The UI's own decision
// links are signed with a key made per process; the stack's approval key
// is never read.
package awsui
