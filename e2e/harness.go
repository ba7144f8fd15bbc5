package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/approval"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
	"github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/task"
)

// The functions the differential tier deploys in the box, named as the
// compiled state machines' substitutions expect them.
const (
	FnStep     = "stepline-step"
	FnApproval = "stepline-approval"
	FnCallback = "stepline-callback"
	FnRecorder = "stepline-recorder"
	Table      = "stepline-runs"
	// APIBaseURL is where the box's approval links point: the box has no
	// API Gateway, so the tier hands the callback function the request
	// API Gateway would.
	APIBaseURL = "https://api.box.invalid"
	// ArtifactBucket is the step function's ARTIFACT_BUCKET: where agent
	// steps longer than one invocation keep their conversation between
	// Tasks (and long traces and artifacts go), as on AWS.
	ArtifactBucket = "stepline-box-artifacts"
	// AgentBudget is the step function's AGENT_INVOCATION_BUDGET: so short
	// that every Task of an agent step longer than one invocation makes
	// exactly one model call (the first call of a Task always starts) and
	// then hands back, so that the box runs each such step across as many
	// Tasks as it makes model calls.
	AgentBudget = "1ns"
)

// Harness is the box with Stepline's functions deployed, the fake model
// server, and a work directory for the scenarios' files.
type Harness struct {
	Tools Tools
	Box   *Box
	AWS   *AWS
	Fake  *Fake
	Store *dynamo.Store
	Work  string    // scenario files and the local runs' state
	Key   []byte    // the approval links' signing key
	Role  string    // the functions' role
	once  sync.Once // deploy
	err   error     // of deploy
}

// Deploy creates the table, the artifact bucket, the secrets the
// pipelines and projects name (secrets), the approval key, and the step,
// approval, callback and recorder functions from the amd64 bootstraps.
func (h *Harness) Deploy(ctx context.Context, secrets []string) error {
	h.once.Do(func() { h.err = h.deploy(ctx, secrets) })
	return h.err
}

func (h *Harness) deploy(ctx context.Context, secrets []string) error {
	role, err := h.AWS.CreateRole(ctx, "stepline-box")
	if err != nil {
		return err
	}
	h.Role = role
	if err := dynamotest.CreateTable(ctx, h.AWS.DynamoDB, Table, dynamo.Schema()); err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	if err := h.AWS.CreateBucket(ctx, ArtifactBucket); err != nil {
		return err
	}
	var refs []string
	for _, s := range secrets {
		name := "stepline/box/" + s
		if _, err := h.AWS.CreateSecret(ctx, name, "box-secret-"+s); err != nil {
			return err
		}
		refs = append(refs, s+"=secretsmanager:"+name)
	}
	h.Key = []byte("box-approval-signing-key-of-at-least-32-bytes")
	keyARN, err := h.AWS.CreateSecret(ctx, "stepline/box/approval-key", string(h.Key))
	if err != nil {
		return err
	}
	common := map[string]string{"TABLE_NAME": Table, "LOG_LEVEL": "DEBUG"}
	with := func(kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range common {
			env[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	secretRefs := strings.Join(refs, ",")
	for _, fn := range []Function{
		{Name: FnStep, Bootstrap: h.Tools.bootstrap("step"), Timeout: 900,
			Env: with("SECRET_REFS", secretRefs, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", h.Fake.BedrockEndpoint(),
				"ARTIFACT_BUCKET", ArtifactBucket, "AGENT_INVOCATION_BUDGET", AgentBudget)},
		{Name: FnApproval, Bootstrap: h.Tools.bootstrap("approval"), Timeout: 30,
			Env: with("SECRET_REFS", secretRefs, "APPROVAL_KEY_SECRET_ARN", keyARN, "API_BASE_URL", APIBaseURL)},
		{Name: FnCallback, Bootstrap: h.Tools.bootstrap("callback"), Timeout: 10,
			Env: with("APPROVAL_KEY_SECRET_ARN", keyARN)},
		// The recorder reads the deployment's naming rule at start; the
		// box's state machines are named per scenario (machineName), so
		// the rule names none of them and the recorder takes each
		// pipeline's name from its definition, as it does for a state
		// machine of another deployment.
		{Name: FnRecorder, Bootstrap: h.Tools.bootstrap("recorder"), Timeout: 60,
			Env: with("SECRET_REFS", secretRefs, "STATE_MACHINE_PREFIX", "stepline-e2e", "STATE_MACHINE_ACCOUNT", Account)},
	} {
		fn.Role = role
		if _, err := h.AWS.CreateFunction(ctx, fn); err != nil {
			return err
		}
	}
	return nil
}

// Scenario is one pipeline run through both engines.
type Scenario struct {
	Name      string   // short, [a-z0-9-]: names its state machines, fake routes and logs
	Dir       string   // the directory of the pipeline files
	Pipeline  string   // the pipeline file run, in Dir
	Children  []string // sub-pipeline files, in Dir
	Responses string   // the responses file
	Event     string   // the event file ("" for none)
	Want      store.RunStatus
}

// Side is one engine's outcome of a scenario, as recorded in its store.
type Side struct {
	RunID    string
	Run      store.Run
	Steps    []store.StepRecord
	Children []Side // sub-pipeline runs, in the order the steps name them
	Duration time.Duration
	// Tasks counts, by state name, how often the execution entered each
	// Task state (a Retry is no new entry; an agent step's hand-back
	// is): from the box's execution history, nil for a local run.
	Tasks map[string]int
}

// Prepared is a scenario's rewritten files.
type Prepared struct {
	Scenario
	ID      string
	Dir     string            // work directory: the rewritten files
	Files   map[string]string // pipeline name → rewritten file
	Script  *Script
	Secrets []string
	Human   bool             // a pipeline has a human step: Drive looks for approvals
	Project *project.Project // the project that governs the pipelines, as loaded from the original; nil for none

	machine string // the main state machine's ARN, once created
}

var (
	nameRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	humanStep = regexp.MustCompile(`(?m)^\s*executor: human\s*$`)
)

// Prepare rewrites the scenario's pipelines for the box into the work
// directory, with the project file that governs them (RewriteProject;
// an empty one when none does, so that the work directory's own
// ancestors lend them none), and loads its script into the fake.
func (h *Harness) Prepare(sc Scenario) (*Prepared, error) {
	if !nameRE.MatchString(sc.Name) || len(sc.Name) > 40 {
		return nil, fmt.Errorf("scenario %q: want a short name of [a-z0-9-]", sc.Name)
	}
	responses, err := readFile(sc.Responses)
	if err != nil {
		return nil, err
	}
	script, err := ParseScript(responses)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	p := &Prepared{Scenario: sc, ID: sc.Name, Dir: filepath.Join(h.Work, sc.Name), Files: map[string]string{}, Script: script}
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return nil, err
	}
	proj, projSecrets, err := h.prepareProject(p)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	p.Project = proj
	seen := map[string]bool{}
	addSecrets := func(names []string) {
		for _, s := range names {
			if !seen[s] {
				seen[s] = true
				p.Secrets = append(p.Secrets, s)
			}
		}
	}
	addSecrets(projSecrets)
	for _, f := range append([]string{sc.Pipeline}, sc.Children...) {
		src, err := readFile(filepath.Join(sc.Dir, f))
		if err != nil {
			return nil, err
		}
		v, err := Rewrite(src, p.ID, h.Fake, script, proj)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %s: %w", sc.Name, f, err)
		}
		out := filepath.Join(p.Dir, filepath.Base(f))
		if err := os.WriteFile(out, v.YAML, 0o644); err != nil {
			return nil, err
		}
		var meta struct {
			Name string `json:"name"`
		}
		if err := yamlName(v.YAML, &meta.Name); err != nil {
			return nil, fmt.Errorf("scenario %s: %s: %w", sc.Name, f, err)
		}
		p.Files[meta.Name] = out
		p.Human = p.Human || humanStep.Match(v.YAML)
		script.SetRoutes(v.Providers)
		addSecrets(v.Secrets)
	}
	sort.Strings(p.Secrets)
	h.Fake.Load(p.ID, script)
	return p, nil
}

// prepareProject writes the box variant of the project file that governs
// the scenario's pipeline into its work directory, and returns the
// project as loaded from the original and the secrets the file names.
func (h *Harness) prepareProject(p *Prepared) (*project.Project, []string, error) {
	out := filepath.Join(p.Dir, project.FileName)
	path, err := project.Find(filepath.Join(p.Scenario.Dir, p.Pipeline))
	if err != nil {
		return nil, nil, err
	}
	if path == "" {
		return nil, nil, os.WriteFile(out, []byte("# No stepline.yaml governs this scenario's pipelines.\n"), 0o644)
	}
	proj, err := project.Load(path)
	if err != nil {
		return nil, nil, err
	}
	src, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	b, err := RewriteProject(src, proj, p.ID, h.Fake)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return proj, secretNames(src), os.WriteFile(out, b, 0o644)
}

// Main is the rewritten file of the pipeline the scenario runs.
func (p *Prepared) Main() string { return filepath.Join(p.Dir, filepath.Base(p.Pipeline)) }

// stepline runs the CLI.
func (h *Harness) stepline(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, h.Tools.Stepline, args...)
	cmd.Dir = h.Work
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("stepline %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// RunLocal runs the scenario through `stepline run --json --responses`,
// in a state directory of its own, and reads what it recorded. A run
// left waiting for a human with no scripted decision is waited out past
// its approval's expiry and then swept by another `stepline run` in the
// same state directory, which times the approval out, as the CLI does
// for approvals that expire while nothing runs.
func (h *Harness) RunLocal(ctx context.Context, p *Prepared) (Side, error) {
	state := filepath.Join(p.Dir, "local")
	args := []string{"run", "--json", "--dir", state, "--responses", p.Responses}
	if p.Event != "" {
		args = append(args, "--event", p.Event)
	}
	started := time.Now()
	out, err := h.stepline(ctx, append(args, p.Main())...)
	if err != nil {
		return Side{}, err
	}
	var rep struct {
		RunID   string   `json:"run_id"`
		Status  string   `json:"status"`
		Waiting []string `json:"waiting_for"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return Side{}, fmt.Errorf("stepline run --json: %w: %s", err, out)
	}
	if rep.Status == string(store.RunWaiting) {
		if err := h.expireLocal(ctx, p, rep.RunID, state); err != nil {
			return Side{}, err
		}
	}
	dur := time.Since(started)
	// Opened once the CLI is done with it: this package's store may be
	// newer than the CLI's when the tree changed since make build.
	db, err := sqlite.Open(ctx, filepath.Join(state, "stepline.db"))
	if err != nil {
		return Side{}, err
	}
	defer db.Close()
	side, err := readSide(ctx, db, rep.RunID)
	side.Duration = dur
	return side, err
}

// ExpireTimeout bounds how long a local run may wait for its approvals to
// expire.
const ExpireTimeout = time.Minute

// expireLocal sweeps the state directory (a `stepline run` of a pipeline
// that runs nothing) until the run no longer waits: the sweep times out
// the approvals that expired.
func (h *Harness) expireLocal(ctx context.Context, p *Prepared, runID, state string) error {
	sweeper := filepath.Join(p.Dir, "sweep.yaml")
	if err := os.WriteFile(sweeper, []byte(sweepPipeline), 0o644); err != nil {
		return err
	}
	deadline := time.Now().Add(ExpireTimeout)
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		if _, err := h.stepline(ctx, "run", "--json", "--dir", state, sweeper); err != nil {
			return err
		}
		out, err := h.stepline(ctx, "show", "--json", "--dir", state, runID)
		if err != nil {
			return err
		}
		var show struct {
			Run struct {
				Status string `json:"status"`
			} `json:"run"`
		}
		if err := json.Unmarshal(out, &show); err != nil {
			return fmt.Errorf("stepline show --json: %w", err)
		}
		if show.Run.Status != string(store.RunWaiting) {
			return nil
		}
	}
	return fmt.Errorf("run %s still waits after %s", runID, ExpireTimeout)
}

// sweepPipeline is a pipeline that runs nothing: `stepline run` of it
// times out the approvals that expired (the sweep every run starts with).
const sweepPipeline = `name: box-sweep
trigger: {match: {}}
steps:
  - name: nothing
    executor: webhook
    when: labels.never == "set"
    executor_config: {url: "http://127.0.0.1:9/never"}
`

// readSide reads a run, its steps and its sub-pipeline runs.
func readSide(ctx context.Context, st store.Store, runID string) (Side, error) {
	run, steps, err := st.GetRunWithSteps(ctx, runID)
	if err != nil {
		return Side{RunID: runID}, fmt.Errorf("run %s: %w", runID, err)
	}
	side := Side{RunID: runID, Run: run, Steps: steps}
	for _, id := range childRunIDs(steps) {
		c, err := readSide(ctx, st, id)
		if err != nil {
			return side, err
		}
		side.Children = append(side.Children, c)
	}
	return side, nil
}

// childRunIDs are the sub_run_id values the steps' outputs name, in order.
func childRunIDs(steps []store.StepRecord) []string {
	var ids []string
	seen := map[string]bool{}
	for _, s := range steps {
		var out struct {
			SubRunID string `json:"sub_run_id"`
		}
		if json.Unmarshal(s.Output, &out) == nil && out.SubRunID != "" && !seen[out.SubRunID] {
			seen[out.SubRunID] = true
			ids = append(ids, out.SubRunID)
		}
	}
	return ids
}

// NewRunID is a run ID as stepline run makes them.
func NewRunID() string {
	var b [12]byte
	rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:])
}

// machineName is the box's state machine of pipeline name in scenario id.
func machineName(id, name string) string { return id + "--" + name }

// Definition compiles a rewritten pipeline file with bin/stepline and
// substitutes the resources of the box: the functions, and each
// sub-pipeline's state machine of the same scenario.
func (h *Harness) Definition(ctx context.Context, p *Prepared, file string) (string, error) {
	out, err := h.stepline(ctx, "compile", file)
	if err != nil {
		return "", err
	}
	def := strings.NewReplacer(task.StepFunctionPlaceholder, functionArn(FnStep), task.ApprovalFunctionPlaceholder, functionArn(FnApproval)).Replace(string(out))
	for name := range p.Files {
		def = strings.ReplaceAll(def, compiler.ChildPlaceholder(name), stateMachineArn(machineName(p.ID, name)))
	}
	if m := regexp.MustCompile(`\$\{[A-Za-z]+Arn\}`).FindString(def); m != "" {
		return "", fmt.Errorf("%s: %s is not substituted", file, m)
	}
	return def, nil
}

// RunBox runs the scenario in the box: its state machines created from
// the compiled definitions, the execution started with the same event,
// the human steps decided through the callback function as the script
// says (a step with no scripted decision is left to time out), and, once
// every execution has ended, the status-change events the box cannot
// deliver handed to the recorder function.
func (h *Harness) RunBox(ctx context.Context, p *Prepared) (Side, error) {
	ex, err := h.Start(ctx, p)
	if err != nil {
		return Side{}, err
	}
	_, err = h.Drive(ctx, p, ex.ARN, ex.RunID)
	dur := time.Since(ex.Started)
	history, herr := h.History(ctx, ex.ARN)
	if b, merr := json.MarshalIndent(history, "", "  "); herr == nil && merr == nil {
		os.WriteFile(filepath.Join(p.Dir, "box-history.json"), b, 0o644)
	}
	if err != nil {
		return Side{}, err
	}
	if herr != nil {
		return Side{}, herr
	}
	if err := h.RecordScenario(ctx, p); err != nil {
		return Side{}, err
	}
	side, err := readSide(ctx, h.Store, ex.RunID)
	side.Duration = dur
	side.Tasks = TasksEntered(history)
	return side, err
}

// TasksEntered counts the Task states an execution history entered, by
// name.
func TasksEntered(history []sfntypes.HistoryEvent) map[string]int {
	out := map[string]int{}
	for _, ev := range history {
		if ev.Type == sfntypes.HistoryEventTypeTaskStateEntered && ev.StateEnteredEventDetails != nil {
			out[aws.ToString(ev.StateEnteredEventDetails.Name)]++
		}
	}
	return out
}

// Execution is a run started in the box.
type Execution struct {
	RunID   string
	ARN     string
	Started time.Time
}

// Start creates the scenario's state machines (once) and starts its
// pipeline with its event, named as a local run is.
func (h *Harness) Start(ctx context.Context, p *Prepared) (Execution, error) {
	if p.machine == "" {
		names := make([]string, 0, len(p.Files))
		for name := range p.Files {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			def, err := h.Definition(ctx, p, p.Files[name])
			if err != nil {
				return Execution{}, err
			}
			os.WriteFile(filepath.Join(p.Dir, name+".asl.json"), []byte(def), 0o644)
			out, err := h.AWS.SFN.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{
				Name: aws.String(machineName(p.ID, name)), Definition: aws.String(def), RoleArn: aws.String(h.Role),
			})
			if err != nil {
				return Execution{}, fmt.Errorf("create state machine %s: %w", name, err)
			}
			if p.Files[name] == p.Main() {
				p.machine = aws.ToString(out.StateMachineArn)
			}
		}
	}
	input := `{"trigger": {}}`
	if p.Event != "" {
		b, err := readFile(p.Event)
		if err != nil {
			return Execution{}, err
		}
		trig, err := eventTrigger(b)
		if err != nil {
			return Execution{}, err
		}
		input = `{"trigger": ` + string(trig) + `}`
	}
	ex := Execution{RunID: NewRunID(), Started: time.Now()}
	out, err := h.AWS.SFN.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(p.machine), Name: aws.String(ex.RunID), Input: aws.String(input)})
	if err != nil {
		return Execution{}, fmt.Errorf("start execution: %w", err)
	}
	ex.ARN = aws.ToString(out.ExecutionArn)
	return ex, nil
}

// RecordScenario hands the recorder every ended execution of the
// scenario's state machines.
func (h *Harness) RecordScenario(ctx context.Context, p *Prepared) error {
	for name := range p.Files {
		if err := h.RecordAll(ctx, stateMachineArn(machineName(p.ID, name))); err != nil {
			return err
		}
	}
	return nil
}

// History is an execution's history events, with their data.
func (h *Harness) History(ctx context.Context, executionARN string) ([]sfntypes.HistoryEvent, error) {
	var events []sfntypes.HistoryEvent
	in := &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(executionARN), IncludeExecutionData: aws.Bool(true)}
	for {
		out, err := h.AWS.SFN.GetExecutionHistory(ctx, in)
		if err != nil {
			return events, fmt.Errorf("execution history: %w", err)
		}
		events = append(events, out.Events...)
		if out.NextToken == nil {
			return events, nil
		}
		in.NextToken = out.NextToken
	}
}

// DriveTimeout bounds one execution in the box.
const DriveTimeout = 2 * time.Minute

// Drive polls the execution until it ends, deciding the approvals of the
// scenario's runs as the script says; it returns the final description.
func (h *Harness) Drive(ctx context.Context, p *Prepared, executionARN, runID string) (*sfn.DescribeExecutionOutput, error) {
	deadline := time.Now().Add(DriveTimeout)
	decided := map[string]bool{}
	for {
		d, err := h.AWS.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(executionARN)})
		if err != nil {
			return nil, fmt.Errorf("describe execution: %w", err)
		}
		if d.Status != sfntypes.ExecutionStatusRunning {
			return d, nil
		}
		if time.Now().After(deadline) {
			return d, fmt.Errorf("execution %s still running after %s", runID, DriveTimeout)
		}
		if !p.Human {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		pending, err := h.PendingApprovals(ctx, p.Files)
		if err != nil {
			return nil, err
		}
		for _, a := range pending {
			if decided[a.ID] {
				continue
			}
			decided[a.ID] = true
			decision, by, ok := p.Script.Decision(a.Step)
			if !ok {
				continue // left to time out
			}
			if by == "" {
				by = "box-approver"
			}
			if _, err := h.Decide(ctx, a, decision, by); err != nil {
				return nil, err
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// PendingApprovals are the undecided approvals of runs of the given
// pipelines (a scan: the table only holds the tier's runs).
func (h *Harness) PendingApprovals(ctx context.Context, pipelines map[string]string) ([]store.Approval, error) {
	out, err := h.AWS.DynamoDB.Scan(ctx, &dynamodb.ScanInput{
		TableName:        aws.String(Table),
		FilterExpression: aws.String("begins_with(PK, :a) AND attribute_not_exists(decision)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":a": &ddbtypes.AttributeValueMemberS{Value: "APPROVAL#"},
		},
		ProjectionExpression: aws.String("id, pipeline"),
	})
	if err != nil {
		return nil, fmt.Errorf("scan approvals: %w", err)
	}
	var list []store.Approval
	for _, item := range out.Items {
		id, _ := item["id"].(*ddbtypes.AttributeValueMemberS)
		pl, _ := item["pipeline"].(*ddbtypes.AttributeValueMemberS)
		if id == nil || pl == nil {
			continue
		}
		if _, ours := pipelines[pl.Value]; !ours {
			continue
		}
		a, err := h.Store.GetApproval(ctx, id.Value)
		if err != nil {
			return nil, err
		}
		list = append(list, a)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].CreatedAt.Before(list[j].CreatedAt) })
	return list, nil
}

// WaitApproval waits for the pending approval of run runID.
func (h *Harness) WaitApproval(ctx context.Context, p *Prepared, runID string) (store.Approval, error) {
	deadline := time.Now().Add(DriveTimeout)
	for time.Now().Before(deadline) {
		pending, err := h.PendingApprovals(ctx, p.Files)
		if err != nil {
			return store.Approval{}, err
		}
		for _, a := range pending {
			if a.RunID == runID {
				return a, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return store.Approval{}, fmt.Errorf("run %s: no approval within %s", runID, DriveTimeout)
}

// Wait polls an execution until it is no longer running.
func (h *Harness) Wait(ctx context.Context, executionARN string) (*sfn.DescribeExecutionOutput, error) {
	deadline := time.Now().Add(DriveTimeout)
	for {
		d, err := h.AWS.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(executionARN)})
		if err != nil {
			return nil, fmt.Errorf("describe execution: %w", err)
		}
		if d.Status != sfntypes.ExecutionStatusRunning {
			return d, nil
		}
		if time.Now().After(deadline) {
			return d, fmt.Errorf("execution %s still running after %s", executionARN, DriveTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Link is the approval's signed link, as the approval function makes it.
func (h *Harness) Link(a store.Approval) string {
	return (&approval.Service{Signer: &approval.Signer{Key: h.Key}}).Link(APIBaseURL, a)
}

// Callback sends the callback function the HTTP API request (payload
// format 2.0) of method on the approval link's path, with body, and
// returns its answer.
func (h *Harness) Callback(ctx context.Context, method, link, contentType, body string) (events.APIGatewayV2HTTPResponse, error) {
	path := strings.TrimPrefix(link, APIBaseURL)
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: method + " /approvals/{token}", RawPath: path, Body: body,
		Headers: map[string]string{"host": strings.TrimPrefix(APIBaseURL, "https://"), "content-type": contentType},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			DomainName: strings.TrimPrefix(APIBaseURL, "https://"),
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, SourceIP: "127.0.0.1"},
		},
	}
	inv, err := h.AWS.Invoke(ctx, FnCallback, ev)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if inv.FunctionError != "" {
		return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("callback function failed: %s", inv.Payload)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(inv.Payload, &resp); err != nil {
		return resp, fmt.Errorf("callback answer: %w: %s", err, inv.Payload)
	}
	return resp, nil
}

// Decide posts a decision on the approval's link through the callback
// function, as an approver's browser would.
func (h *Harness) Decide(ctx context.Context, a store.Approval, decision, by string) (events.APIGatewayV2HTTPResponse, error) {
	body, _ := json.Marshal(map[string]string{"decision": decision, "by": by})
	resp, err := h.Callback(ctx, "POST", h.Link(a), "application/json", string(body))
	// The form's answer is 303 See Other (back to the page); a JSON body
	// gets 200.
	if err == nil && resp.StatusCode >= 300 && resp.StatusCode != 303 {
		err = fmt.Errorf("decide %s on %s: HTTP %d: %s", decision, a.Step, resp.StatusCode, firstLine(resp.Body))
	}
	return resp, err
}

// RecordAll hands the recorder function the status change of every
// execution of a state machine that ended: what EventBridge delivers on
// AWS and the box cannot.
func (h *Harness) RecordAll(ctx context.Context, machineARN string) error {
	list, err := h.AWS.SFN.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(machineARN)})
	if err != nil {
		return fmt.Errorf("list executions: %w", err)
	}
	for _, e := range list.Executions {
		if e.Status == sfntypes.ExecutionStatusRunning {
			continue
		}
		if err := h.Record(ctx, aws.ToString(e.ExecutionArn)); err != nil {
			return err
		}
	}
	return nil
}

// StatusChange is the EventBridge event Step Functions sends when an
// execution's status changes.
func StatusChange(d *sfn.DescribeExecutionOutput) events.CloudWatchEvent {
	detail := map[string]any{
		"executionArn": aws.ToString(d.ExecutionArn), "stateMachineArn": aws.ToString(d.StateMachineArn),
		"name": aws.ToString(d.Name), "status": string(d.Status), "startDate": d.StartDate.UnixMilli(),
		"input": d.Input, "output": d.Output, "error": d.Error, "cause": d.Cause,
	}
	if d.StopDate != nil {
		detail["stopDate"] = d.StopDate.UnixMilli()
	}
	raw, _ := json.Marshal(detail)
	return events.CloudWatchEvent{
		Version: "0", ID: NewRunID(), DetailType: "Step Functions Execution Status Change", Source: "aws.states",
		AccountID: Account, Region: Region, Time: time.Now().UTC(), Resources: []string{aws.ToString(d.ExecutionArn)}, Detail: raw,
	}
}

// Record hands the recorder the execution's current status.
func (h *Harness) Record(ctx context.Context, executionARN string) error {
	d, err := h.AWS.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(executionARN)})
	if err != nil {
		return fmt.Errorf("describe execution: %w", err)
	}
	inv, err := h.AWS.Invoke(ctx, FnRecorder, StatusChange(d))
	if err != nil {
		return err
	}
	if inv.FunctionError != "" {
		return fmt.Errorf("recorder failed on %s: %s", aws.ToString(d.Name), inv.Payload)
	}
	return nil
}

// eventTrigger is the run's trigger from an event file, as stepline run
// reads it: a top-level "trigger", else the whole object.
func eventTrigger(b []byte) (json.RawMessage, error) {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("an event must be a JSON object: %v", err)
	}
	if t, ok := v["trigger"]; ok {
		return t, nil
	}
	return b, nil
}

// yamlName reads a pipeline's name.
func yamlName(src []byte, name *string) error {
	var m struct {
		Name string `yaml:"name"`
	}
	if err := yamlUnmarshal(src, &m); err != nil {
		return err
	}
	if m.Name == "" {
		return errors.New("the pipeline has no name")
	}
	*name = m.Name
	return nil
}
