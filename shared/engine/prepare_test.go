package engine

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stepline/stepline/shared/asl"
)

// preparedDef is a two-state machine: a Pass whose Output is expr, then
// Succeed.
func preparedDef(t *testing.T, expr string) *asl.StateMachine {
	t.Helper()
	def := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "A"}
	must(t, def.States.Add("A", &asl.Pass{Output: map[string]any{"v": expr}, Next: "Done"}))
	must(t, def.States.Add("Done", &asl.Succeed{}))
	return def
}

// TestPrepare: Prepare reports the hash and size Start's compile finds,
// and keeps the program, which Start then runs.
func TestPrepare(t *testing.T) {
	def := preparedDef(t, "{% $states.input.n + 1 %}")
	want, err := compile(def, 0)
	must(t, err)
	e := New(Config{Journal: newJournal(), Clock: newClock(true)})
	c, err := e.Prepare(def)
	must(t, err)
	if c.Hash != want.hash {
		t.Errorf("hash %s, want %s", c.Hash, want.hash)
	}
	raw, err := asl.Marshal(def)
	must(t, err)
	if c.Size != compactSize(raw) {
		t.Errorf("size %d, want %d", c.Size, compactSize(raw))
	}
	kept := e.progs[def]
	if kept == nil {
		t.Fatal("Prepare kept no program")
	}
	res, err := e.Start(context.Background(), "r1", def, []byte(`{"n": 1}`))
	res = mustResult(t, res, err, StatusSucceeded)
	jsonEqual(t, res.Output, `{"v": 2}`)
	if e.progs[def] != kept {
		t.Error("Start compiled the prepared definition again")
	}
	// A broken body is refused by Prepare, with the error Start wraps.
	bad := preparedDef(t, "{% $states.input.n + %}")
	_, perr := e.Prepare(bad)
	_, serr := New(Config{Journal: newJournal()}).Start(context.Background(), "r2", bad, nil)
	if perr == nil || serr == nil || !strings.HasSuffix(serr.Error(), ": "+perr.Error()) || !strings.Contains(perr.Error(), "does not compile") {
		t.Errorf("Prepare: %v; Start: %v; want the same compile error", perr, serr)
	}
}

// TestPrepareChecked: a definition given back with what Prepare found of
// it runs as it did, with the same hash; the size limit and the
// structural checks still apply; a JSONata body is checked when its
// program is first compiled.
func TestPrepareChecked(t *testing.T) {
	def := preparedDef(t, "{% $states.input.n + 1 %}")
	c, err := New(Config{}).Prepare(def)
	must(t, err)

	t.Run("runs with the same hash", func(t *testing.T) {
		again := preparedDef(t, "{% $states.input.n + 1 %}") // decoded anew in a later process
		e := New(Config{Journal: newJournal(), Clock: newClock(true)})
		must(t, e.PrepareChecked(again, c))
		if p := e.progs[again]; p == nil || p.hash != c.Hash {
			t.Fatalf("program %v, want one with hash %s", p, c.Hash)
		}
		res, err := e.Start(context.Background(), "r1", again, []byte(`{"n": 41}`))
		res = mustResult(t, res, err, StatusSucceeded)
		jsonEqual(t, res.Output, `{"v": 42}`)
	})

	t.Run("size limit", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			max  int
			ok   bool
		}{
			{"under", c.Size + 1, true},
			{"at", c.Size, true},
			{"over", c.Size - 1, false},
		} {
			e := New(Config{MaxDefinitionBytes: tc.max})
			err := e.PrepareChecked(preparedDef(t, "{% $states.input.n + 1 %}"), c)
			if tc.ok && err != nil {
				t.Errorf("%s the limit: %v", tc.name, err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "over the")) {
				t.Errorf("%s the limit: err = %v, want the size refused", tc.name, err)
			}
		}
	})

	t.Run("not a compile's", func(t *testing.T) {
		for _, bad := range []Checked{
			{Hash: c.Hash, Size: 0},
			{Hash: c.Hash[:63], Size: c.Size},
			{Hash: c.Hash + "0", Size: c.Size},
			{Hash: strings.ToUpper(c.Hash[:1]) + "x" + c.Hash[2:], Size: c.Size},
			{Hash: "", Size: c.Size},
		} {
			if err := New(Config{}).PrepareChecked(preparedDef(t, "{% 1 %}"), bad); err == nil {
				t.Errorf("%+v accepted", bad)
			}
		}
	})

	t.Run("structural checks", func(t *testing.T) {
		broken := &asl.StateMachine{QueryLanguage: asl.JSONata, StartAt: "A"}
		must(t, broken.States.Add("A", &asl.Pass{Next: "Nowhere"}))
		err := New(Config{}).PrepareChecked(broken, c)
		if err == nil || !strings.Contains(err.Error(), "Nowhere") {
			t.Errorf("err = %v, want the missing Next target", err)
		}
	})

	t.Run("body checked at first compile", func(t *testing.T) {
		for _, body := range []string{"$states.input.n +", "1); (2"} {
			bad := preparedDef(t, "{% "+body+" %}")
			e := New(Config{Journal: newJournal(), Clock: newClock(true)})
			must(t, e.PrepareChecked(bad, c))
			res, err := e.Start(context.Background(), "r", bad, []byte(`{"n": 1}`))
			if err != nil {
				t.Fatalf("%q: %v", body, err)
			}
			if res.Status != StatusFailed || !strings.Contains(res.Cause, "does not compile") {
				t.Errorf("%q: %s %s %s, want the run failed on the body", body, res.Status, res.Error, res.Cause)
			}
		}
	})
}

// BenchmarkProgramPipelineChecked is BenchmarkProgramPipeline for a
// definition given back with what Prepare found of it (PrepareChecked:
// a process that reads the definition cache): full compiles and checked
// ones in the same run.
func BenchmarkProgramPipelineChecked(b *testing.B) {
	def := benchPipelineDef(b)
	_, c, err := compileFull(def, 64<<20)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			if _, err := compile(def, 64<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("checked", func(b *testing.B) {
		for b.Loop() {
			if _, err := compileChecked(def, c, 64<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestPlainPath: plainPath matches what the regexp it stands for
// matches, with the same name and fields.
func TestPlainPath(t *testing.T) {
	re := regexp.MustCompile(`^\s*\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*$`)
	for _, body := range []string{
		"$a", "$run", " $run ", "\t$run\n", "\f$x\r", "$_", "$a1.b2.c_3", "$states.result.Payload",
		"", "$", " $ ", "a", "$1", "$a.", "$a..b", "$a.1b", "$a .b", "$a. b", "$a.b ", "$a.b c",
		"$a-b", "$a[0]", "$a.b[0]", "$$a", "$é", "$a.é", "x$a", "$a\v", "\v$a", "$states.input.rerun.from_step = 's0'",
	} {
		var want []string
		if m := re.FindStringSubmatch(body); m != nil {
			want = append([]string{m[1]}, strings.Split(m[2], ".")[1:]...)
		}
		if got := plainPath(body); !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Errorf("plainPath(%q) = %q, want %q", body, got, want)
		}
	}
}
