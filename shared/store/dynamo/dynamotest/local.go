// Package dynamotest finds or starts DynamoDB Local for tests of any
// package that needs a real DynamoDB: the store's conformance suite, the
// Lambda bootstraps run through the Runtime Interface Emulator.
package dynamotest

// Tests run against DynamoDB Local, which this package finds and starts (a
// JVM on a free loopback port) when the first test needs it; the test
// binary's TestMain calls Stop when the tests end:
//
//   - STEPLINE_DYNAMODB_LOCAL=http://host:port uses a running instance;
//   - STEPLINE_DYNAMODB_LOCAL=/dir uses the jar unpacked in /dir (as
//     scripts/dynamodb-local.sh install leaves it);
//   - otherwise the jar is looked for in <repo>/.cache/dynamodb-local,
//     $XDG_CACHE_HOME/stepline/dynamodb-local and ~/.cache/stepline/dynamodb-local.
//
// When none is found the tests skip, except with CI set, where they fail.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stepline/stepline/internal/testenv"
	"github.com/stepline/stepline/shared/store/dynamo"
)

// local is DynamoDB Local as the first test that needs it found it: an
// endpoint, or why there is none. TestMain stops the emulator at the end.
var local struct {
	once     sync.Once
	endpoint string
	missing  string
	proc     *process
}

var tableSeq atomic.Int64

// Stop stops the emulator this package started, if any. Call it from
// TestMain after m.Run.
func Stop() {
	if local.proc != nil {
		local.proc.stop()
	}
}

func findLocal() {
	endpoint, jar, err := locate()
	switch {
	case err != nil:
		local.missing = err.Error()
	case endpoint != "":
		local.endpoint = endpoint
	default:
		proc, err := start(jar)
		if err != nil {
			local.missing = err.Error()
			return
		}
		local.proc = proc
		local.endpoint = proc.endpoint
	}
}

// Endpoint returns the URL of DynamoDB Local, or skips the test (fails it
// in CI) when there is none.
func Endpoint(t testing.TB) string {
	t.Helper()
	local.once.Do(findLocal)
	if local.endpoint == "" {
		testenv.Missing(t, fmt.Sprintf("DynamoDB Local not available (%s); run make dynamodb-local", local.missing))
	}
	return local.endpoint
}

// Client returns the store's client for DynamoDB Local (see Endpoint).
func Client(t testing.TB) *dynamo.Client {
	t.Helper()
	c, err := dynamo.NewClient(config(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// config returns an AWS configuration for DynamoDB Local.
func config(t testing.TB) aws.Config {
	t.Helper()
	Endpoint(t)
	return aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(local.endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	}
}

// NewTable creates a fresh Stepline table (dynamo.Schema, with TTL on)
// and deletes it when the test ends. The tables are managed through the
// SDK's client: the store itself never creates or deletes tables.
func NewTable(t testing.TB) string {
	t.Helper()
	c := dynamodb.NewFromConfig(config(t))
	name := fmt.Sprintf("stepline-test-%d", tableSeq.Add(1))
	if err := CreateTable(context.Background(), c, name, dynamo.Schema()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Errorf("delete table %s: %v", name, err)
		}
	})
	return name
}

// CreateTable creates a table with schema s, on-demand billing, waits
// until it is active and turns TTL on.
func CreateTable(ctx context.Context, c *dynamodb.Client, name string, s dynamo.TableSchema) error {
	keys := func(pk, sk string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange},
		}
	}
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		KeySchema:   keys(s.PartitionKey, s.SortKey),
		BillingMode: types.BillingModePayPerRequest,
	}
	for _, a := range s.KeyAttributes() {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(a), AttributeType: types.ScalarAttributeTypeS})
	}
	for _, ix := range s.Indexes {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName:  aws.String(ix.Name),
			KeySchema:  keys(ix.PartitionKey, ix.SortKey),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: ix.NonKeyAttributes},
		})
	}
	if _, err := c.CreateTable(ctx, in); err != nil {
		return fmt.Errorf("create table %q: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = 5 * time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute); err != nil {
		return fmt.Errorf("create table %q: wait until active: %w", name, err)
	}
	_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(s.TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("create table %q: enable TTL: %w", name, err)
	}
	return nil
}

func locate() (endpoint, jar string, err error) {
	if v := os.Getenv("STEPLINE_DYNAMODB_LOCAL"); v != "" {
		if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
			return v, "", nil
		}
		if jar := findJar(v); jar != "" {
			return "", jar, nil
		}
		return "", "", fmt.Errorf("STEPLINE_DYNAMODB_LOCAL=%s holds no DynamoDBLocal.jar", v)
	}
	var dirs []string
	if root := testenv.RepoRoot(); root != "" {
		dirs = append(dirs, filepath.Join(root, ".cache", "dynamodb-local"))
	}
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		dirs = append(dirs, filepath.Join(x, "stepline", "dynamodb-local"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(h, ".cache", "stepline", "dynamodb-local"))
	}
	for _, d := range dirs {
		if jar := findJar(d); jar != "" {
			return "", jar, nil
		}
	}
	return "", "", fmt.Errorf("no DynamoDBLocal.jar in %s and STEPLINE_DYNAMODB_LOCAL is unset", strings.Join(dirs, ", "))
}

func findJar(dir string) string {
	for _, p := range []string{"DynamoDBLocal.jar", "emulator/DynamoDBLocal.jar", "package/emulator/DynamoDBLocal.jar"} {
		if fi, err := os.Stat(filepath.Join(dir, p)); err == nil && !fi.IsDir() {
			return filepath.Join(dir, p)
		}
	}
	return ""
}

type process struct {
	cmd      *exec.Cmd
	endpoint string
	done     chan struct{}
	once     sync.Once
}

// start runs DynamoDB Local in memory on a free port and waits until it
// answers. A port taken between choosing and binding is retried.
func start(jar string) (*process, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java is not on PATH: %w", err)
	}
	var errs []error
	for range 3 {
		p, err := startOnce(java, jar)
		if err == nil {
			return p, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func startOnce(java, jar string) (*process, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(jar)
	cmd := exec.Command(java, "-XX:-UsePerfData", "-Xmx256m",
		"-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"),
		"-jar", jar, "-inMemory", "-port", fmt.Sprint(port), "-disableTelemetry")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	setParentDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start DynamoDB Local: %w", err)
	}
	p := &process{cmd: cmd, endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()

	deadline := time.Now().Add(60 * time.Second)
	hc := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return nil, fmt.Errorf("DynamoDB Local exited during start-up: %s", strings.TrimSpace(out.String()))
		case <-time.After(100 * time.Millisecond):
		}
		// It answers a bare GET with 400 and a request ID. Another server
		// that took the port between choosing and binding answers too,
		// without one (DynamoDB Local then exits, its bind refused, and
		// the start is tried again on another port): its answer does not
		// count.
		if answers(hc, p.endpoint) {
			return p, nil
		}
	}
	p.stop()
	return nil, fmt.Errorf("DynamoDB Local did not answer on %s within 60 s", p.endpoint)
}

// answers reports whether DynamoDB Local serves endpoint: a GET is
// answered with its request ID header.
func answers(hc *http.Client, endpoint string) bool {
	resp, err := hc.Get(endpoint)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.Header.Get("X-Amzn-Requestid") != ""
}

func (p *process) stop() {
	p.once.Do(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
}
