package local

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	jsonata "github.com/blues/jsonata-go"
	"modernc.org/sqlite"

	"github.com/stepline/stepline/shared/llmoutput"
	"github.com/stepline/stepline/shared/store"
	sqlitestore "github.com/stepline/stepline/shared/store/sqlite"
	"github.com/stepline/stepline/shared/template"
)

// floor is the least one step can cost, so that BenchmarkRun's time per
// step can be read as a multiple of it: one step-row insert in its own
// write transaction on a WAL database opened with the store's settings
// (the same file, schema and connection parameters), one Liquid render
// of a template already parsed (package template, as steprun caches
// them), one parse of a model reply (package llmoutput) and one JSONata
// evaluation of a step's outcome condition, compiled once and wrapped as
// the engine wraps it (blues/jsonata-go, the engine's evaluator).
type floor struct {
	conn   *sql.Conn // the one writer connection, as the store has
	insert *sql.Stmt // prepared on conn
	rows   int

	tmpl     *template.Template
	bindings map[string]any

	reply string

	expr *jsonata.Expr
	doc  map[string]any
}

// floorInsert is the store's step insert, with the columns a scripted
// step fills.
const floorInsert = `INSERT INTO steps (run_id, name, attempt, step_index, executor, status,
	primary_confidence, effective_confidence, output, raw_response, prompt, model, provider,
	started_at, finished_at, duration_ms, digest)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func newFloor(b testing.TB, dir string) *floor {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(dir, "floor.db")
	// The store creates the file, WAL mode and the schema.
	st, err := sqlitestore.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	// The writer's connection parameters (store/sqlite open).
	q := url.Values{
		"_busy_timeout": {fmt.Sprint(sqlitestore.BusyTimeout)},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"NORMAL"},
		"_txlock":       {"immediate"},
		"_pragma":       {fmt.Sprintf("wal_autocheckpoint(%d)", sqlitestore.WALCheckpointPages)},
	}
	c, err := sqlite.NewConnector("file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	db := sql.OpenDB(c)
	b.Cleanup(func() { db.Close() })
	f := &floor{reply: `{"confidence": 0.9, "summary": "done", "next_step_context": "go on"}`}
	if f.conn, err = db.Conn(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.conn.Close() })
	var mode string
	if err := f.conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		b.Fatalf("journal mode %q (%v), want wal", mode, err)
	}
	if f.insert, err = f.conn.PrepareContext(ctx, floorInsert); err != nil {
		b.Fatal(err)
	}
	if f.tmpl, err = template.New(template.Limits{}).Parse("{{ steps.s0.summary }}"); err != nil {
		b.Fatal(err)
	}
	f.bindings = map[string]any{"steps": map[string]any{"s0": map[string]any{"summary": "step 0 of run 0", "confidence": 0.9}}}
	if f.expr, err = jsonata.Compile("($states := $.`states`; (\n$states.input.status = 'completed'\n))"); err != nil {
		b.Fatal(err)
	}
	f.doc = map[string]any{"states": map[string]any{"input": map[string]any{
		"status": "completed", "output": map[string]any{"confidence": 0.9, "summary": "done"}}}}
	return f
}

// write inserts one step row in a write transaction of its own, with the
// prepared statement or not.
func (f *floor) write(ctx context.Context, prepared bool) error {
	tx, err := f.conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	f.rows++
	now := time.Now().UTC().Format(time.RFC3339Nano)
	args := []any{fmt.Sprintf("run-%d", f.rows/1000), fmt.Sprintf("s%d", f.rows%1000), 1, f.rows % 1000, "scripted",
		string(store.StepCompleted), 0.9, 0.9, f.reply, f.reply, "step", "scripted", "scripted", now, now, 0,
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
	if prepared {
		_, err = tx.StmtContext(ctx, f.insert).ExecContext(ctx, args...)
	} else {
		_, err = tx.ExecContext(ctx, floorInsert, args...)
	}
	if err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (f *floor) render(ctx context.Context) error {
	out, err := f.tmpl.Render(ctx, f.bindings)
	if err == nil && out != "step 0 of run 0" {
		err = fmt.Errorf("rendered %q", out)
	}
	return err
}

func (f *floor) parse() error {
	if r := llmoutput.Parse(f.reply, llmoutput.ParseOptions{}); r.Output == nil {
		return fmt.Errorf("reply refused: %+v", r)
	}
	return nil
}

func (f *floor) eval() error {
	v, err := f.expr.Eval(f.doc)
	if err == nil && v != true {
		err = fmt.Errorf("condition is %v", v)
	}
	return err
}

// step is the floor of one step.
func (f *floor) step(ctx context.Context, prepared bool) error {
	if err := f.write(ctx, prepared); err != nil {
		return err
	}
	if err := f.render(ctx); err != nil {
		return err
	}
	if err := f.parse(); err != nil {
		return err
	}
	return f.eval()
}

// BenchmarkFloor measures the floor's parts and the whole, with the
// insert's statement prepared once and not.
func BenchmarkFloor(b *testing.B) {
	ctx := context.Background()
	parts := []struct {
		name string
		do   func(*floor) error
	}{
		{"insert", func(f *floor) error { return f.write(ctx, false) }},
		{"insert-prepared", func(f *floor) error { return f.write(ctx, true) }},
		{"render", func(f *floor) error { return f.render(ctx) }},
		{"parse", func(f *floor) error { return f.parse() }},
		{"jsonata", func(f *floor) error { return f.eval() }},
		{"step", func(f *floor) error { return f.step(ctx, false) }},
		{"step-prepared", func(f *floor) error { return f.step(ctx, true) }},
	}
	for _, p := range parts {
		b.Run(p.name, func(b *testing.B) {
			f := newFloor(b, b.TempDir())
			b.ReportAllocs()
			for b.Loop() {
				if err := p.do(f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "µs/op")
		})
	}
}

// BenchmarkRunFloor runs BenchmarkRun's pipelines and, in the same
// iteration, as many floor steps (prepared and not), so that the ratio
// of a run's time per step to the floor's is taken from one stretch of
// the machine's time whatever else it does. It reports the three times
// per step and the two ratios; give -count for several samples and quote
// their medians.
func BenchmarkRunFloor(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			sm, _ := benchPipeline(b, dir, n, 0)
			r := openBench(b, dir, nil)
			f := newFloor(b, dir)
			ctx := context.Background()
			var run, plain, prepared time.Duration
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				o, err := r.Start(ctx, sm, "bench", json.RawMessage(`{}`), fmt.Sprintf("run-%d", i))
				if err != nil || o.Status != store.RunCompleted {
					b.Fatalf("run %d: %v %+v", i, err, o)
				}
				t1 := time.Now()
				for j := 0; j < n; j++ {
					if err := f.step(ctx, false); err != nil {
						b.Fatal(err)
					}
				}
				t2 := time.Now()
				for j := 0; j < n; j++ {
					if err := f.step(ctx, true); err != nil {
						b.Fatal(err)
					}
				}
				run, plain, prepared = run+t1.Sub(t0), plain+t2.Sub(t1), prepared+time.Since(t2)
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(b.N) / float64(n) }
			b.ReportMetric(per(run), "run-µs/step")
			b.ReportMetric(per(plain), "floor-µs/step")
			b.ReportMetric(per(prepared), "floor-prepared-µs/step")
			b.ReportMetric(float64(run)/float64(plain), "run/floor")
			b.ReportMetric(float64(run)/float64(prepared), "run/floor-prepared")
		})
	}
}
