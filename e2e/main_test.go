package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/internal/testenv"
	"github.com/stepline/stepline/shared/agent"
	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/store/dynamo"
)

var (
	setupOnce sync.Once
	shared    *Harness
	setupErr  error
	missing   error // tools the box needs and does not have
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.Fake.Close()
		if err := shared.Box.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: stop the box: %v\n", err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// logDir is where the box, the emulators and the scenarios leave their
// logs and files: e2e/logs, emptied when the tier starts.
func logDir() string { return filepath.Join(testenv.RepoRoot(), "e2e", "logs") }

// box returns the running harness, starting it on first use. Without
// STEPLINE_E2E the test skips; when a tool is missing it skips, or fails
// in CI (testenv.Missing).
func box(t testing.TB) *Harness {
	t.Helper()
	if os.Getenv(EnvRun) == "" {
		t.Skip("the offline AWS tier runs with make e2e (" + EnvRun + "=1)")
	}
	setupOnce.Do(func() { shared, setupErr = setup() })
	if missing != nil {
		testenv.Missing(t, missing.Error())
	}
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return shared
}

func setup() (*Harness, error) {
	root := testenv.RepoRoot()
	tools, err := FindTools(root)
	if err != nil {
		missing = err
		return nil, err
	}
	logs := logDir()
	if err := os.RemoveAll(logs); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	started := time.Now()
	b, err := StartBox(ctx, tools, logs)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "e2e: box up in %s at %s (launcher pid %d; logs in %s)\n", time.Since(started).Round(time.Millisecond), b.Endpoint, b.PID, logs)
	h := &Harness{Tools: tools, Box: b, Work: filepath.Join(logs, "scenarios")}
	fail := func(err error) (*Harness, error) {
		b.Stop()
		return nil, err
	}
	if h.AWS, err = NewAWS(b.Endpoint); err != nil {
		return fail(err)
	}
	if h.Fake, err = StartFake(); err != nil {
		return fail(err)
	}
	client, err := dynamo.NewClient(h.AWS.Config)
	if err != nil {
		return fail(err)
	}
	h.Store = dynamo.New(client, Table)
	secrets, err := allSecrets(root)
	if err != nil {
		return fail(err)
	}
	started = time.Now()
	if err := h.Deploy(ctx, secrets); err != nil {
		return fail(fmt.Errorf("deploy the functions: %w", err))
	}
	fmt.Fprintf(os.Stderr, "e2e: table, %d secrets and 4 functions deployed in %s\n", len(secrets)+1, time.Since(started).Round(time.Millisecond))
	return h, nil
}

// allSecrets are the ${NAME} secrets every pipeline the tier runs names,
// with those of the project files that govern them (their MCP servers'
// headers, their providers' keys) and the keys the built-in providers
// send by default, which a compiled agent step carries unwritten.
func allSecrets(root string) ([]string, error) {
	var files []string
	for _, pattern := range []string{"pipelines/*.yaml", project.FileName, "e2e/testdata/scenarios/*/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	seen := map[string]bool{}
	for _, p := range agent.BuiltinProviders() {
		if m := secretRef.FindStringSubmatch(p.APIKey); m != nil {
			seen[m[1]] = true
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, s := range secretNames(b) {
			seen[s] = true
		}
	}
	if len(seen) == 0 {
		return nil, errors.New("no pipeline names a secret")
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out, nil
}
