package local

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/local/defcache"
	"github.com/stepline/stepline/shared/steprun"
	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/sqlite"
)

// cacheProject is a project whose pipeline runs a sub-pipeline, with an
// agent and a library step: every kind of input a compile reads.
var cacheProject = map[string]string{
	"stepline.yaml":           "agents: agents\nsteps: steps\n",
	"pipelines/main.yaml":     "name: main\nsteps:\n  - {name: first, executor: scripted, prompt_template: go}\n  - {name: sub, executor: pipeline, executor_config: {pipeline: child}}\n",
	"pipelines/child.yaml":    "name: child\nsteps:\n  - {name: inner, executor: scripted, prompt_template: go}\n",
	"agents/judge/agent.yaml": "name: judge\nmodel: anthropic/claude-haiku-4-5-20251001\n",
	"agents/judge/soul.md":    "You judge.\n",
	"steps/note.yaml":         "name: note\nexecutor: scripted\nprompt_template: note\n",
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// compileCounted compiles path and returns the definition as JSON and how
// many pipeline files the call compiled.
func compileCounted(t *testing.T, r *Runner, path string) (string, int64) {
	t.Helper()
	before := r.compiles.Load()
	sm, name, _, err := r.Compile(path)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	if name != "main" {
		t.Fatalf("compiled %q, want main", name)
	}
	def, err := compiler.Marshal(sm)
	if err != nil {
		t.Fatal(err)
	}
	return string(def), r.compiles.Load() - before
}

// TestDefinitionCacheHit: a pipeline whose inputs did not change is
// compiled once; the cached definition is the one compiled, and runs.
func TestDefinitionCacheHit(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, cacheProject)
	path := filepath.Join(dir, "pipelines", "main.yaml")
	state := filepath.Join(dir, ".stepline")
	r := openBenchBuild(t, state, "build-1")
	first, n := compileCounted(t, r, path)
	if n != 2 {
		t.Fatalf("first compile compiled %d files, want 2 (the pipeline and its sub-pipeline)", n)
	}
	second, n := compileCounted(t, r, path)
	if n != 0 {
		t.Errorf("second compile compiled %d files, want 0", n)
	}
	if first != second {
		t.Errorf("cached definition differs from the compiled one")
	}
	// In one process, every run of the unchanged pipeline gets the same
	// state machine, so that the engine compiles it once.
	a, _, _, errA := r.Compile(path)
	b, _, _, errB := r.Compile(path)
	if errA != nil || errB != nil || a != b {
		t.Errorf("two compiles of an unchanged pipeline: %p %p (%v %v), want one state machine", a, b, errA, errB)
	}
	// Another process (another Runner on the same state) hits too.
	r2 := openBenchBuild(t, state, "build-1")
	if _, n := compileCounted(t, r2, path); n != 0 {
		t.Errorf("another runner compiled %d files, want 0", n)
	}
	o, err := r2.Run(context.Background(), path, nil, "")
	if err != nil || o.Status != store.RunCompleted {
		t.Fatalf("run from the cache: %+v %v", o, err)
	}
	if n := r2.compiles.Load(); n != 0 {
		t.Errorf("the run compiled %d files", n)
	}
	children, err := r2.Store.ListRuns(context.Background(), store.RunFilter{Pipeline: "child", Limit: 10})
	if err != nil || len(children) != 1 || children[0].Status != store.RunCompleted {
		t.Errorf("the sub-pipeline's run: %+v %v", children, err)
	}
}

// TestDefinitionCacheMiss: a change to any input, or another build,
// compiles again, and the definition is the new one.
func TestDefinitionCacheMiss(t *testing.T) {
	cases := []struct {
		name   string
		files  map[string]string
		build  string
		want   string // in the definition after the change; "" none asked
		wantN  int64
		remove string
	}{
		{name: "pipeline", files: map[string]string{"pipelines/main.yaml": strings.Replace(cacheProject["pipelines/main.yaml"], "first", "renamed", 1)}, want: "renamed", wantN: 2},
		{name: "sub-pipeline", files: map[string]string{"pipelines/child.yaml": strings.Replace(cacheProject["pipelines/child.yaml"], "inner", "deeper", 1)}, wantN: 2},
		{name: "project file", files: map[string]string{"stepline.yaml": cacheProject["stepline.yaml"] + "executors: {openai: {base_url: 'https://gw.example.com/v1'}}\n"}, wantN: 2},
		{name: "agent profile", files: map[string]string{"agents/judge/agent.yaml": "name: judge\nmodel: anthropic/claude-sonnet-4-5\n"}, wantN: 2},
		{name: "agent soul", files: map[string]string{"agents/judge/soul.md": "You judge, strictly.\n"}, wantN: 2},
		{name: "library step", files: map[string]string{"steps/note.yaml": "name: note\nexecutor: scripted\nprompt_template: other\n"}, wantN: 2},
		{name: "build", build: "build-2", wantN: 2},
		{name: "nothing", wantN: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, cacheProject)
			path := filepath.Join(dir, "pipelines", "main.yaml")
			state := filepath.Join(dir, ".stepline")
			r := openBenchBuild(t, state, "build-1")
			before, _ := compileCounted(t, r, path)
			kept, _, _, err := r.Compile(path) // the compile this process keeps
			if err != nil {
				t.Fatal(err)
			}
			writeTree(t, dir, c.files)
			if c.build != "" {
				r = openBenchBuild(t, state, c.build) // another build is another process
			}
			after, n := compileCounted(t, r, path)
			if again, _, _, _ := r.Compile(path); (again == kept) != (c.wantN == 0) {
				t.Errorf("the state machine kept before: returned %v, want %v", again == kept, c.wantN == 0)
			}
			if n != c.wantN {
				t.Errorf("compiled %d files after the change, want %d", n, c.wantN)
			}
			if c.want != "" && (!strings.Contains(after, c.want) || after == before) {
				t.Errorf("the definition does not have %q", c.want)
			}
			// The new compile is cached in turn.
			if _, n := compileCounted(t, r, path); n != 0 {
				t.Errorf("compiled %d files again, want 0", n)
			}
		})
	}
}

// TestDefinitionCacheCorrupt: a cache file that does not check is
// ignored (the pipeline compiles) and replaced by a good one.
func TestDefinitionCacheCorrupt(t *testing.T) {
	for _, spoil := range []struct {
		name string
		do   func([]byte) []byte
	}{
		{"cut short", func(b []byte) []byte { return b[:len(b)/2] }},
		{"a byte changed", func(b []byte) []byte {
			i := bytes.Index(b, []byte("StartAt"))
			if i < 0 { // the files are base64: change a body byte
				i = len(b) - 20
			}
			b[i] ^= 1
			return b
		}},
		{"empty", func([]byte) []byte { return nil }},
	} {
		t.Run(spoil.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, cacheProject)
			path := filepath.Join(dir, "pipelines", "main.yaml")
			state := filepath.Join(dir, ".stepline")
			r := openBenchBuild(t, state, "build-1")
			want, _ := compileCounted(t, r, path)
			entries, _ := filepath.Glob(filepath.Join(state, "definitions", "cache", "*.def"))
			if len(entries) != 1 {
				t.Fatalf("%d cache entries, want 1", len(entries))
			}
			raw, err := os.ReadFile(entries[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(entries[0], spoil.do(bytes.Clone(raw)), 0o644); err != nil {
				t.Fatal(err)
			}
			// Another process, which has not the compile in memory.
			r = openBenchBuild(t, state, "build-1")
			got, n := compileCounted(t, r, path)
			if n != 2 || got != want {
				t.Errorf("after the spoiling: compiled %d files (want 2), same definition %v", n, got == want)
			}
			fixed, err := os.ReadFile(entries[0])
			if err != nil || !bytes.Equal(fixed, raw) {
				t.Errorf("the entry was not rewritten as it was (%v)", err)
			}
			if _, n := compileCounted(t, r, path); n != 0 {
				t.Errorf("compiled %d files after the rewrite, want 0", n)
			}
		})
	}
}

// TestDefinitionCacheRestoresDefinitions: a hit saves the cached
// definitions again where another compile replaced them (another
// directory's pipeline of the same name), so that resumes and child runs
// load what this run runs.
func TestDefinitionCacheRestoresDefinitions(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, cacheProject)
	path := filepath.Join(dir, "pipelines", "main.yaml")
	state := filepath.Join(dir, ".stepline")
	r := openBenchBuild(t, state, "build-1")
	compileCounted(t, r, path)
	defPath := filepath.Join(state, "definitions", "child.asl.json")
	want, err := os.ReadFile(defPath)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other", "child.yaml")
	writeTree(t, dir, map[string]string{"other/child.yaml": "name: child\nsteps:\n  - {name: elsewhere, executor: scripted}\n"})
	if _, _, _, err := r.Compile(other); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(defPath); bytes.Equal(b, want) {
		t.Fatal("the other child did not replace the definition")
	}
	if _, n := compileCounted(t, r, path); n != 0 {
		t.Fatalf("compiled %d files, want a hit", n)
	}
	got, err := os.ReadFile(defPath)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the child's definition was not restored from memory (%v)", err)
	}
	// The same from the cache file, in another process.
	if _, _, _, err := r.Compile(other); err != nil {
		t.Fatal(err)
	}
	if _, n := compileCounted(t, openBenchBuild(t, state, "build-1"), path); n != 0 {
		t.Fatalf("compiled %d files, want a hit", n)
	}
	got, err = os.ReadFile(defPath)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the child's definition was not restored from the cache file (%v)", err)
	}
	var sm asl.StateMachine
	if err := json.Unmarshal(got, &sm); err != nil || !bytes.Contains(got, []byte("inner")) {
		t.Errorf("restored definition: %v", err)
	}
}

// TestDefinitionCacheNotForErrors: a pipeline that does not compile is
// not cached: each compile reports its errors again.
func TestDefinitionCacheNotForErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(path, []byte("name: bad\nsteps:\n  - {name: a, executor: nosuch}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := openBenchBuild(t, filepath.Join(dir, ".stepline"), "build-1")
	for i := 0; i < 2; i++ {
		_, _, ds, err := r.Compile(path)
		if _, ok := compiler.AsError(err); !ok || !strings.Contains(err.Error()+ds.String(), "nosuch") {
			t.Fatalf("compile %d: %v", i, err)
		}
	}
	if n := r.compiles.Load(); n != 2 {
		t.Errorf("compiled %d times, want 2", n)
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, ".stepline", "definitions", "cache", "*.def")); len(entries) != 0 {
		t.Errorf("cache entries for a pipeline with errors: %v", entries)
	}
}

// TestDefinitionCacheChecked: an entry keeps what the engine's compile
// found of the definition (its hash and size); a process that reads the
// entry gives that to its engine, whose runs then carry the entry's hash,
// the hash a full compile of the same bytes finds. An entry without it
// runs through the engine's full compile.
func TestDefinitionCacheChecked(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, cacheProject)
	path := filepath.Join(dir, "pipelines", "main.yaml")
	state := filepath.Join(dir, ".stepline")
	r := openBenchBuild(t, state, "build-1")
	if _, _, _, err := r.Compile(path); err != nil {
		t.Fatal(err)
	}
	in := defcache.Inputs{Build: "build-1", Pipeline: path}
	key, err := in.Key()
	if err != nil {
		t.Fatal(err)
	}
	cache := defcache.Cache{Dir: filepath.Join(state, "definitions", "cache")}
	e, err := cache.Get(key)
	if err != nil || e.Checked == nil {
		t.Fatalf("entry %+v, %v: want one with what the engine checked", e, err)
	}
	var def []byte
	for _, f := range e.Files {
		if f.Name == "main.asl.json" {
			def = f.Data
		}
	}
	sm, err := asl.Decode(def)
	if err != nil {
		t.Fatal(err)
	}
	full, err := engine.New(engine.Config{MaxDefinitionBytes: benchDefinitionBytes}).Prepare(sm)
	if err != nil || full != *e.Checked {
		t.Fatalf("a full compile of the entry's bytes finds %+v (%v), the entry says %+v", full, err, *e.Checked)
	}

	// runHash runs the pipeline in a new runner and returns its
	// checkpoint's definition hash.
	runHash := func(t *testing.T) string {
		t.Helper()
		r := openBenchBuild(t, state, "build-1")
		o, err := r.Run(context.Background(), path, nil, "")
		if err != nil || o.Status != store.RunCompleted {
			t.Fatalf("run from the cache: %+v %v", o, err)
		}
		if n := r.compiles.Load(); n != 0 {
			t.Fatalf("the run compiled %d files, want the cache's", n)
		}
		cp, err := r.Store.LoadCheckpoint(context.Background(), o.RunID)
		if err != nil {
			t.Fatal(err)
		}
		var snap struct {
			DefHash string `json:"defHash"`
		}
		if err := json.Unmarshal(cp.Snapshot, &snap); err != nil {
			t.Fatal(err)
		}
		return snap.DefHash
	}
	if got := runHash(t); got != full.Hash {
		t.Errorf("run from the cache has definition hash %s, want %s", got, full.Hash)
	}
	// The engine takes the entry's word for the hash: an entry that says
	// another (a well-formed one) is what the run carries.
	other := *e.Checked
	other.Hash = strings.Repeat("ab", 32)
	e.Checked = &other
	if err := cache.Put(key, e); err != nil {
		t.Fatal(err)
	}
	if got := runHash(t); got != other.Hash {
		t.Errorf("run from an entry saying hash %s carries %s: the engine compiled it again", other.Hash, got)
	}
	// Without it, the engine compiles the definition in full.
	e.Checked = nil
	if err := cache.Put(key, e); err != nil {
		t.Fatal(err)
	}
	if got := runHash(t); got != full.Hash {
		t.Errorf("run from an entry without the engine's facts has hash %s, want %s", got, full.Hash)
	}
}

// TestDefinitionCacheNotForRefused: a definition the engine refuses (here
// over a runner's size limit) is not cached, and each run of it fails at
// its start with the engine's error.
func TestDefinitionCacheNotForRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte("name: p\nsteps:\n  - {name: a, executor: scripted, prompt_template: go}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), Config{Dir: filepath.Join(dir, ".stepline"), MaxDefinitionBytes: 100, BuildID: "build-1",
		Handler: func(st *sqlite.Store) StepHandler { return &steprun.Handler{Store: st, Executors: answer{}} }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 0; i < 2; i++ {
		_, err := r.Run(context.Background(), path, nil, "")
		if err == nil || !strings.Contains(err.Error(), "over the 100-byte limit") {
			t.Fatalf("run %d: err = %v, want the size limit", i, err)
		}
	}
	if n := r.compiles.Load(); n != 2 {
		t.Errorf("compiled %d times, want 2", n)
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, ".stepline", "definitions", "cache", "*.def")); len(entries) != 0 {
		t.Errorf("cache entries for a definition the engine refuses: %v", entries)
	}
}
