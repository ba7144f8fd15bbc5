package local

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/asl"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/internal/atomicfile"
	"github.com/stepline/stepline/shared/local/defcache"
)

// Compile compiles a pipeline file and saves its definition for later
// resumes. Diagnostics with errors are returned as an error. With
// Config.BuildID, a pipeline compiled before from the same files is not
// compiled again: its definitions are taken from the cache (and saved
// again where another compile replaced them).
func (r *Runner) Compile(path string) (*asl.StateMachine, string, compiler.Diagnostics, error) {
	if r.build == "" {
		return r.compile(path, map[string]bool{}, nil)
	}
	in := defcache.Inputs{Build: r.build, Pipeline: path, Project: r.project}
	cache := defcache.Cache{Dir: filepath.Join(r.dir, "definitions", "cache")}
	key, kerr := in.Key()
	if kerr == nil {
		if c := r.remembered(key); c != nil {
			if err := r.restore(c.entry); err != nil {
				return nil, "", nil, err
			}
			return c.sm, c.entry.Name, c.entry.Diagnostics, nil
		}
		if sm, e, err := r.cached(cache, key); err == nil {
			r.remember(key, &compiled{sm: sm, entry: e})
			return sm, e.Name, e.Diagnostics, nil
		} else if !errors.Is(err, defcache.ErrMiss) {
			r.log.Warn("compile again", "pipeline", path, "cache", err)
		}
	}
	var files []defcache.File
	sm, name, ds, err := r.compile(path, map[string]bool{}, &files)
	if err != nil || kerr != nil {
		return sm, name, ds, err
	}
	// Keep it only when no input changed while it compiled, and only
	// once the engine accepted it (Prepare: its checks, the ones a run's
	// start makes), with what the engine found of it: a later process
	// gives that back (cached) instead of checking the same bytes again.
	// A definition the engine refuses is not kept; its run fails at its
	// start, with the engine's error, as every run of it does.
	if again, err := in.Key(); err == nil && again == key {
		checked, err := r.engine.Prepare(sm)
		if err != nil {
			return sm, name, ds, nil
		}
		e := defcache.Entry{Name: name, Files: files, Diagnostics: ds, Checked: &checked}
		if err := cache.Put(key, e); err != nil {
			r.log.Warn("keep compiled definition", "pipeline", path, "error", err)
		}
		r.remember(key, &compiled{sm: sm, entry: e})
	}
	return sm, name, ds, nil
}

// compiled is a compile this Runner made or loaded: the state machine it
// returned, and the files and warnings of its cache entry.
type compiled struct {
	sm    *asl.StateMachine
	entry defcache.Entry
}

// maxRemembered bounds the compiles a Runner keeps in memory.
const maxRemembered = 16

// remembered returns the compile kept under key, nil when there is none.
// Returning the same state machine to every run of an unchanged pipeline
// lets the engine reuse what it compiled of it (engine programs are kept
// by definition): a definition is never changed once returned.
func (r *Runner) remembered(key defcache.Key) *compiled {
	r.defMu.Lock()
	defer r.defMu.Unlock()
	return r.defs[key]
}

func (r *Runner) remember(key defcache.Key, c *compiled) {
	r.defMu.Lock()
	defer r.defMu.Unlock()
	if r.defs == nil || len(r.defs) >= maxRemembered {
		r.defs = map[defcache.Key]*compiled{}
	}
	r.defs[key] = c
}

// restore saves e's files in the definitions directory again unless they
// hold the same bytes (another compile of a pipeline of the same name
// replaced them), so that resumes and child runs load what this run runs.
func (r *Runner) restore(e defcache.Entry) error {
	for _, f := range e.Files {
		path := filepath.Join(r.dir, "definitions", f.Name)
		if !sameContent(path, f.Data) {
			if err := atomicfile.Write(path, f.Data); err != nil {
				return fmt.Errorf("save definition: %w", err)
			}
		}
	}
	return nil
}

// sameContent reports whether the file at path holds exactly data,
// reading it a piece at a time rather than whole (a 100-step pipeline's
// definition is about 250 KB); false when it cannot be read.
func sameContent(path string, data []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() != int64(len(data)) {
		return false
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := io.ReadFull(f, buf)
		if n > len(data) || !bytes.Equal(buf[:n], data[:n]) {
			return false
		}
		data = data[n:]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return len(data) == 0
		}
		if err != nil {
			return false
		}
	}
}

// cached loads the compile cached under key: its files are saved in the
// definitions directory again unless they hold the same bytes, and the
// pipeline's definition is decoded as a resume decodes it (definitions):
// it was parsed and checked when it was compiled, and its bytes are those
// the cache verified. The engine is given it with what its compile found
// of those bytes then (engine.PrepareChecked: the structural checks and
// the size limit again, not each JSONata body); an entry without that, or
// one the engine does not take so, is left to the engine's full compile
// at the run's start, which reports what is wrong with it.
func (r *Runner) cached(cache defcache.Cache, key defcache.Key) (*asl.StateMachine, defcache.Entry, error) {
	e, err := cache.Get(key)
	if err != nil {
		return nil, e, err
	}
	if err := r.restore(e); err != nil {
		return nil, e, err
	}
	var def []byte
	for _, f := range e.Files {
		if f.Name == e.Name+".asl.json" {
			def = f.Data
		}
	}
	sm, err := asl.Decode(def)
	if err != nil {
		return nil, e, fmt.Errorf("%w: %v", defcache.ErrCorrupt, err)
	}
	if e.Checked != nil {
		_ = r.engine.PrepareChecked(sm, *e.Checked) // on error Start compiles it
	}
	return sm, e, nil
}

// compile compiles a pipeline and, from the same directory, the
// sub-pipelines it runs (seen stops cycles). The files it saves are
// appended to saved when it is not nil.
func (r *Runner) compile(path string, seen map[string]bool, saved *[]defcache.File) (*asl.StateMachine, string, compiler.Diagnostics, error) {
	var (
		f   *compiler.File
		sm  *asl.StateMachine
		ds  compiler.Diagnostics
		err error
	)
	r.compiles.Add(1)
	if r.project != nil {
		f, sm, ds, err = gate.CompileFileIn(path, r.project, settings.Defaults{})
	} else {
		f, sm, ds, err = gate.CompileFile(path, settings.Defaults{})
	}
	if err != nil {
		return nil, "", nil, err
	}
	if sm == nil {
		return nil, "", ds, ds.Err()
	}
	def, err := compiler.Marshal(sm)
	if err != nil {
		return nil, "", ds, err
	}
	name := f.Pipeline.Name
	seen[name] = true
	if err := r.compileChildren(filepath.Dir(path), f.Pipeline, seen, saved); err != nil {
		return nil, "", ds, err
	}
	if err := atomicfile.Write(filepath.Join(r.dir, "definitions", name+".asl.json"), def); err != nil {
		return nil, "", ds, fmt.Errorf("save definition: %w", err)
	}
	m, err := r.saveMeta(meta{Name: name, Durable: f.Pipeline.Durable})
	if err != nil {
		return nil, "", ds, fmt.Errorf("save definition: %w", err)
	}
	if saved != nil {
		*saved = append(*saved, defcache.File{Name: name + ".asl.json", Data: def}, defcache.File{Name: name + ".meta.json", Data: m})
	}
	// Run the parsed copy: exactly what another process will load.
	parsed, err := asl.Parse(def)
	if err != nil {
		return nil, "", ds, fmt.Errorf("reload definition: %w", err)
	}
	return parsed, name, ds, nil
}
