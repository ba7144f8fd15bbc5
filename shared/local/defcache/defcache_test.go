package defcache

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/pipeline"
	"github.com/stepline/stepline/shared/project"
)

// tree writes files (path: content) under a new directory and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		write(t, filepath.Join(dir, name), content)
	}
	return dir
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func key(t *testing.T, in Inputs) Key {
	t.Helper()
	k, err := in.Key()
	if err != nil {
		t.Fatalf("key: %v", err)
	}
	return k
}

// project is a project with a pipeline, a sub-pipeline beside it, an
// agent and a library step.
var projectFiles = map[string]string{
	"stepline.yaml":                "agents: agents\nsteps: steps\n",
	"pipelines/main.yaml":          "name: main\nsteps: [{name: a, executor: pipeline, executor_config: {pipeline: child}}]\n",
	"pipelines/child.yaml":         "name: child\nsteps: [{name: b, executor: scripted}]\n",
	"pipelines/notes.txt":          "not a pipeline file\n",
	"agents/triage/agent.yaml":     "name: triage\nmodel: anthropic/claude\n",
	"agents/triage/soul.md":        "You triage.\n",
	"steps/summarise.yaml":         "name: summarise\nexecutor: scripted\n",
	"elsewhere/other-project.yaml": "name: other\n",
}

// TestKeyChangesWithEveryInput: the key is the same while no input
// changes, and differs after a change to any one of them; a file the
// compile does not read changes nothing.
func TestKeyChangesWithEveryInput(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, dir string) // nil: the build changes
		build  string
		same   bool
	}{
		{name: "nothing", same: true},
		{name: "pipeline bytes", change: edit("pipelines/main.yaml", "name: main\nsteps: [{name: a2, executor: scripted}]\n")},
		{name: "pipeline touched, same bytes", change: edit("pipelines/main.yaml", projectFiles["pipelines/main.yaml"]), same: true},
		{name: "sub-pipeline", change: edit("pipelines/child.yaml", "name: child\nsteps: [{name: c, executor: scripted}]\n")},
		{name: "new pipeline file beside it", change: edit("pipelines/more.yml", "name: more\n")},
		{name: "sub-pipeline removed", change: remove("pipelines/child.yaml")},
		{name: "other file beside it", change: edit("pipelines/notes.txt", "changed\n"), same: true},
		{name: "new other file beside it", change: edit("pipelines/run.log", "a log\n"), same: true},
		{name: "state directory beside it", change: edit("pipelines/.stepline/stepline.db", "x"), same: true},
		{name: "directory named as a pipeline file", change: edit("pipelines/odd.yaml/inner.txt", "x"), same: false},
		{name: "new directory in an agent", change: edit("agents/triage/refs/a.md", "x"), same: false},
		{name: "project file", change: edit("stepline.yaml", "agents: agents\nsteps: steps\npolicy: {default: deny}\n")},
		{name: "agent profile", change: edit("agents/triage/agent.yaml", "name: triage\nmodel: anthropic/other\n")},
		{name: "agent soul", change: edit("agents/triage/soul.md", "You triage carefully.\n")},
		{name: "new agent", change: edit("agents/judge/agent.yaml", "name: judge\n")},
		{name: "agent removed", change: remove("agents/triage/agent.yaml")},
		{name: "library step", change: edit("steps/summarise.yaml", "name: summarise\nexecutor: webhook\n")},
		{name: "new library step", change: edit("steps/extra.yaml", "name: extra\n")},
		{name: "file outside the inputs", change: edit("elsewhere/other-project.yaml", "name: changed\n"), same: true},
		{name: "build", build: "b2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := tree(t, projectFiles)
			in := Inputs{Build: "b1", Pipeline: filepath.Join(dir, "pipelines", "main.yaml")}
			before := key(t, in)
			if c.change != nil {
				c.change(t, dir)
			}
			if c.build != "" {
				in.Build = c.build
			}
			after := key(t, in)
			if (before == after) != c.same {
				t.Errorf("key %s before, %s after: same = %v, want %v", before, after, before == after, c.same)
			}
		})
	}
}

func edit(name, content string) func(*testing.T, string) {
	return func(t *testing.T, dir string) { write(t, filepath.Join(dir, name), content) }
}

func remove(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeyWithProjectGiven: a project given (--config) is hashed from its
// own file and directories, whatever stepline.yaml lies above the
// pipeline.
func TestKeyWithProjectGiven(t *testing.T) {
	dir := tree(t, projectFiles)
	write(t, filepath.Join(dir, "given", "stepline.yaml"), "agents: team-agents\n")
	write(t, filepath.Join(dir, "given", "team-agents", "ops", "agent.yaml"), "name: ops\n")
	p, err := project.Load(filepath.Join(dir, "given", "stepline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(dir, "pipelines", "main.yaml")
	found, given := key(t, Inputs{Pipeline: pipe}), key(t, Inputs{Pipeline: pipe, Project: p})
	if found == given {
		t.Fatal("the same key with the project found and with another given")
	}
	// The found project's agents are not the given project's inputs.
	write(t, filepath.Join(dir, "agents", "triage", "soul.md"), "changed\n")
	if again := key(t, Inputs{Pipeline: pipe, Project: p}); again != given {
		t.Error("the key changed with an agent of the project not given")
	}
	write(t, filepath.Join(dir, "given", "team-agents", "ops", "agent.yaml"), "name: ops\nmodel: x/y\n")
	if again := key(t, Inputs{Pipeline: pipe, Project: p}); again == given {
		t.Error("the key did not change with the given project's agent")
	}
}

// TestKeyWithoutProject: a pipeline with no stepline.yaml above it is
// keyed by its directory's pipeline files alone.
func TestKeyWithoutProject(t *testing.T) {
	dir := tree(t, map[string]string{"p.yaml": "name: p\n"})
	if _, err := project.Find(filepath.Join(dir, "p.yaml")); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := project.Find(filepath.Join(dir, "p.yaml")); cfg != "" {
		t.Skipf("a stepline.yaml above the temporary directory: %s", cfg)
	}
	in := Inputs{Pipeline: filepath.Join(dir, "p.yaml")}
	k := key(t, in)
	write(t, filepath.Join(dir, "p.yaml"), "name: p2\n")
	if key(t, in) == k {
		t.Error("the key did not change with the pipeline")
	}
}

// TestKeyBounds: past MaxFiles the inputs are not hashed.
func TestKeyBounds(t *testing.T) {
	files := map[string]string{"stepline.yaml": "", "pipelines/p.yaml": "name: p\n"}
	for i := 0; i <= MaxFiles; i++ {
		files[filepath.Join("steps", strings.Repeat("s", 1+i%7)+string(rune('a'+i%26))+itoa(i)+".yaml")] = "x"
	}
	dir := tree(t, files)
	_, err := Inputs{Pipeline: filepath.Join(dir, "pipelines", "p.yaml")}.Key()
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("key of %d inputs: %v, want ErrTooLarge", MaxFiles+2, err)
	}
}

func itoa(i int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		if i /= 10; i == 0 {
			return string(b)
		}
	}
}

func entry() Entry {
	return Entry{
		Name: "main",
		Files: []File{
			{Name: "child.asl.json", Data: []byte(`{"StartAt":"b"}`)},
			{Name: "main.asl.json", Data: []byte("{\n  \"StartAt\": \"a\"\n}")},
			{Name: "main.meta.json", Data: []byte(`{"name":"main"}`)},
		},
		Diagnostics: compiler.Diagnostics{{Pos: pipeline.Pos{File: "main.yaml", Line: 3, Col: 5}, Warning: true, Msg: "a warning"}},
	}
}

func TestPutGet(t *testing.T) {
	c := Cache{Dir: filepath.Join(t.TempDir(), "cache")}
	var k Key
	k[0] = 1
	if _, err := c.Get(k); !errors.Is(err, ErrMiss) {
		t.Fatalf("get before put: %v, want ErrMiss", err)
	}
	if err := c.Put(k, entry()); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	want := entry()
	if got.Name != want.Name || len(got.Files) != len(want.Files) || len(got.Diagnostics) != 1 || got.Diagnostics[0] != want.Diagnostics[0] {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i, f := range got.Files {
		if f.Name != want.Files[i].Name || !bytes.Equal(f.Data, want.Files[i].Data) {
			t.Errorf("file %d: %q %q, want %q %q", i, f.Name, f.Data, want.Files[i].Name, want.Files[i].Data)
		}
		if cap(f.Data) != len(f.Data) {
			t.Errorf("file %d: appending to its data would write over the next file's", i)
		}
	}
	if got.Checked != nil {
		t.Errorf("checked %+v from an entry without it", got.Checked)
	}
	// What the engine found of the definition comes back as it was put.
	e := entry()
	e.Checked = &engine.Checked{Hash: strings.Repeat("0f", 32), Size: 1234}
	if err := c.Put(k, e); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(k); err != nil || got.Checked == nil || *got.Checked != *e.Checked {
		t.Errorf("checked %+v (%v), want %+v", got.Checked, err, *e.Checked)
	}
}

// TestCorruptEntries: an entry that does not check is never returned,
// and Put replaces it.
func TestCorruptEntries(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(t *testing.T, c Cache, k Key, raw []byte) []byte
	}{
		{"cut short", func(_ *testing.T, _ Cache, _ Key, raw []byte) []byte { return raw[:len(raw)-10] }},
		{"one byte of the body changed", func(_ *testing.T, _ Cache, _ Key, raw []byte) []byte {
			i := bytes.Index(raw, []byte(`"main"`))
			raw[i+1] = 'n'
			return raw
		}},
		{"longer", func(_ *testing.T, _ Cache, _ Key, raw []byte) []byte { return append(raw, ' ') }},
		{"empty", func(*testing.T, Cache, Key, []byte) []byte { return nil }},
		{"no header", func(_ *testing.T, _ Cache, _ Key, raw []byte) []byte {
			_, b, _ := bytes.Cut(raw, []byte{'\n'})
			return b
		}},
		{"other magic", func(_ *testing.T, _ Cache, _ Key, raw []byte) []byte {
			return bytes.Replace(raw, []byte("cache 2"), []byte("cache 3"), 1)
		}},
		{"the JSON body of format 1", func(t *testing.T, _ Cache, k Key, _ []byte) []byte {
			b, err := json.Marshal(map[string]any{"key": k.String(), "entry": entry()})
			if err != nil {
				t.Fatal(err)
			}
			return append([]byte(header(b)), b...)
		}},
		{"file sizes past the body, hash recomputed", func(t *testing.T, _ Cache, k Key, _ []byte) []byte {
			_, b, _ := bytes.Cut(seal(t, k, entry()), []byte{'\n'})
			if !bytes.Contains(b, []byte(`"size":15`)) {
				t.Fatalf("no size 15 in %s", b)
			}
			b = bytes.Replace(b, []byte(`"size":15`), []byte(`"size":99`), 1)
			return append([]byte(header(b)), b...)
		}},
		{"bytes after the last file, hash recomputed", func(t *testing.T, _ Cache, k Key, _ []byte) []byte {
			_, b, _ := bytes.Cut(seal(t, k, entry()), []byte{'\n'})
			b = append(b, "extra"...)
			return append([]byte(header(b)), b...)
		}},
		{"another key's entry", func(t *testing.T, c Cache, _ Key, _ []byte) []byte {
			var other Key
			other[0] = 9
			if err := c.Put(other, entry()); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(c.path(other))
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}},
		{"length and hash recomputed over a path", func(t *testing.T, _ Cache, k Key, _ []byte) []byte {
			e := entry()
			e.Files[0].Name = "../escape.asl.json"
			return seal(t, k, e)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cache := Cache{Dir: t.TempDir()}
			var k Key
			k[0] = 2
			if err := cache.Put(k, entry()); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(cache.path(k))
			if err != nil {
				t.Fatal(err)
			}
			write(t, cache.path(k), string(c.spoil(t, cache, k, raw)))
			if e, err := cache.Get(k); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("get: %+v, %v; want ErrCorrupt", e, err)
			}
			if err := cache.Put(k, entry()); err != nil {
				t.Fatal(err)
			}
			if _, err := cache.Get(k); err != nil {
				t.Fatalf("get after put: %v", err)
			}
		})
	}
}

// seal writes an entry as Put does, whatever its file names.
func seal(t *testing.T, k Key, e Entry) []byte {
	t.Helper()
	b, err := encode(k, e)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(header(b)), b...)
}

// TestPrune: at most MaxEntries entries are kept, the newest.
func TestPrune(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	var keys []Key
	for i := 0; i < MaxEntries+3; i++ {
		var k Key
		k[0], k[1] = byte(i), byte(i>>8)
		keys = append(keys, k)
		if err := c.Put(k, entry()); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(time.Duration(i-MaxEntries-10) * time.Minute)
		if err := os.Chtimes(c.path(k), old, old); err != nil {
			t.Fatal(err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(c.Dir, "*.def"))
	if len(left) != MaxEntries {
		t.Fatalf("%d entries left, want %d", len(left), MaxEntries)
	}
	if _, err := c.Get(keys[0]); !errors.Is(err, ErrMiss) {
		t.Errorf("the oldest entry: %v, want ErrMiss", err)
	}
	if _, err := c.Get(keys[len(keys)-1]); err != nil {
		t.Errorf("the newest entry: %v", err)
	}
}

func TestReadAtMost(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name      string
		size, max int
		want      int
	}{
		{"empty", 0, 10, 0},
		{"under", 9, 10, 9},
		{"at", 10, 10, 10},
		{"over", 11, 10, 10},
		{"far over", 5000, 10, 10},
		{"large under", 300 << 10, 1 << 20, 300 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Repeat([]byte{'x'}, tc.size)
			for i := range data {
				data[i] = byte(i)
			}
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := readAtMost(f, int64(tc.max))
			if err != nil || !bytes.Equal(got, data[:tc.want]) {
				t.Errorf("read %d bytes (%v), want the first %d of %d", len(got), err, tc.want, tc.size)
			}
		})
	}
}
