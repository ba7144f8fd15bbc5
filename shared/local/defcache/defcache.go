// Package defcache keeps compiled pipeline definitions by a hash of
// everything that determines them, so that a process running a pipeline
// whose files did not change since the last compile loads its definitions
// instead of compiling it again.
//
// # The key
//
// Inputs names what a compile reads: the pipeline file, the other
// pipeline files of its directory (its sub-pipelines, and the files the
// compiler looks for them in), the project file that governs it, its
// agents directory (every profile's files) and its step library, and the
// identity of the build that compiles (Inputs.Build). Key hashes the
// bytes of every one of those files, with their names and the paths as
// given, and which of them are absent: any change to any of them is a
// different key, so a cached entry is never stale, only unused. What is
// hashed is bounded (MaxFiles, MaxInputBytes); past that, Key refuses
// (ErrTooLarge) and the caller compiles.
//
// # The entries
//
// An entry is one file, <dir>/<key>.def, written whole by rename: a
// header with the length and SHA-256 of its body, and the body: one line
// of JSON (the key, the pipeline's name, the diagnostics, what the
// engine's compile found of the definition, each file's name and size)
// followed by the files' bytes as they are, one after the other, so
// that a hit reads its definitions without decoding them from JSON
// strings (a 100-step pipeline's definition is about 250 KB).
// Get verifies both, and the key inside the body, before it trusts an
// entry: a file cut short, changed or misnamed is a miss (ErrCorrupt),
// and the caller's next Put replaces it. At most MaxEntries entries are
// kept; Put removes the oldest past that.
package defcache

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/shared/engine"
	"github.com/stepline/stepline/shared/internal/atomicfile"
	"github.com/stepline/stepline/shared/project"
)

// Bounds on what Key hashes and on what Get reads.
const (
	MaxFiles      = 4096     // input files hashed for one key
	MaxInputBytes = 64 << 20 // their bytes together
	MaxEntryBytes = 64 << 20 // one entry's body
	MaxEntries    = 64       // entries kept in a cache directory
)

// Errors Key and Get return.
var (
	// ErrTooLarge: the inputs are past MaxFiles or MaxInputBytes; compile
	// without the cache.
	ErrTooLarge = errors.New("compile inputs too large to cache")
	// ErrMiss: no entry for the key.
	ErrMiss = errors.New("no cached definition")
	// ErrCorrupt: an entry whose length, hash or key does not check.
	ErrCorrupt = errors.New("corrupt cached definition")
)

// Inputs is what a compile of one pipeline file reads.
type Inputs struct {
	// Build identifies the compiler: a change of binary must change it
	// (its version, commit and the executable's size and time, say).
	Build string
	// Pipeline is the pipeline file, as the compile is given it.
	Pipeline string
	// Project is the project the pipeline compiles in; nil: the one
	// project.Find finds walking up from Pipeline, read here (its file
	// only) for the directories it names.
	Project *project.Project
}

// Key is the hash of a compile's inputs.
type Key [sha256.Size]byte

func (k Key) String() string { return hex.EncodeToString(k[:]) }

// keyer writes the inputs into the hash, counting what it read.
type keyer struct {
	h     hash.Hash
	files int
	bytes int64
}

func (k *keyer) field(tag string, vals ...string) {
	k.h.Write([]byte(tag))
	for _, v := range vals {
		k.h.Write([]byte{0})
		k.h.Write([]byte(strconv.Itoa(len(v))))
		k.h.Write([]byte{':'})
		k.h.Write([]byte(v))
	}
	k.h.Write([]byte{'\n'})
}

// file hashes the file at path, or that it is absent.
func (k *keyer) file(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		k.field("absent", path)
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		k.field("dir", path)
		return nil
	}
	if k.files++; k.files > MaxFiles {
		return ErrTooLarge
	}
	if k.bytes += fi.Size(); k.bytes > MaxInputBytes {
		return ErrTooLarge
	}
	k.field("file", path, strconv.FormatInt(fi.Size(), 10))
	// Read at most the size stated: a file that grows meanwhile is
	// still hashed within the bound, and its next key differs.
	n, err := io.Copy(k.h, io.LimitReader(f, fi.Size()))
	if err != nil {
		return err
	}
	k.field("read", strconv.FormatInt(n, 10))
	return nil
}

// dir hashes the files of dir whose names keep says to, sorted, down to
// depth levels of subdirectories (0: the files of dir only; a
// subdirectory below depth counts only when keep takes its name).
func (k *keyer) dir(dir string, depth int, keep func(name string) bool) error {
	entries, err := os.ReadDir(dir) // sorted by name
	if errors.Is(err, fs.ErrNotExist) {
		k.field("absent", dir)
		return nil
	}
	if err != nil {
		return err
	}
	// Only the entries the compile may read are hashed and counted: a
	// log, a profile or the state directory created beside a pipeline
	// does not make it compile again.
	entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool {
		return !keep(e.Name()) && (depth == 0 || !isDir(filepath.Join(dir, e.Name())))
	})
	k.field("list", dir, strconv.Itoa(len(entries)))
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		fi, err := os.Stat(path) // through a link, as the compile reads it
		switch {
		case err != nil:
			k.field("unreadable", path)
		case fi.IsDir() && depth > 0:
			if err := k.dir(path, depth-1, keep); err != nil {
				return err
			}
		case fi.IsDir():
			k.field("dir", path)
		case keep(e.Name()):
			if err := k.file(path); err != nil {
				return err
			}
		}
	}
	return nil
}

// isDir reports whether path is a directory, through a link.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func pipelineFileName(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

func anyName(string) bool { return true }

// Key hashes in's inputs. Errors are a file that exists but cannot be
// read, and ErrTooLarge: either way, compile without the cache.
func (in Inputs) Key() (Key, error) {
	k := &keyer{h: sha256.New()}
	abs, err := filepath.Abs(in.Pipeline)
	if err != nil {
		return Key{}, err
	}
	k.field("defcache 1")
	k.field("build", in.Build)
	k.field("pipeline", in.Pipeline, abs)
	// The pipeline, and every pipeline file beside it: its sub-pipelines
	// and the files the compiler looks for them in.
	if err := k.file(in.Pipeline); err != nil {
		return Key{}, err
	}
	if err := k.dir(filepath.Dir(in.Pipeline), 0, pipelineFileName); err != nil {
		return Key{}, err
	}
	p := in.Project
	if p == nil {
		cfg, err := project.Find(in.Pipeline)
		if err != nil {
			return Key{}, err
		}
		if cfg == "" {
			k.field("no project")
			return k.sum(), nil
		}
		src, err := os.ReadFile(cfg)
		if err != nil {
			return Key{}, err
		}
		if len(src) > project.MaxFileBytes {
			return Key{}, ErrTooLarge
		}
		p = project.Parse(cfg, src)
	}
	k.field("project", p.Path)
	if err := k.file(p.Path); err != nil {
		return Key{}, err
	}
	// Every file of every profile (agent.yaml, soul.md and what else lies
	// beside them), and the step library.
	if err := k.dir(p.Agents, 1, anyName); err != nil {
		return Key{}, err
	}
	if err := k.dir(p.Steps, 0, anyName); err != nil {
		return Key{}, err
	}
	return k.sum(), nil
}

func (k *keyer) sum() Key {
	var key Key
	k.h.Sum(key[:0])
	return key
}

// Entry is what one compile produced.
type Entry struct {
	// Name is the pipeline's name.
	Name string `json:"name"`
	// Files are the files the compile wrote in the definitions directory
	// (the pipeline's and its sub-pipelines' definitions and their
	// facts), by name, with their content.
	Files []File `json:"files"`
	// Diagnostics are the compile's warnings.
	Diagnostics compiler.Diagnostics `json:"diagnostics,omitempty"`
	// Checked is what the engine's compile found of the pipeline's
	// definition (engine.Engine.Prepare), for the engine of a process that
	// reads the entry (engine.Engine.PrepareChecked); nil: not known.
	Checked *engine.Checked `json:"checked,omitempty"`
}

// File is one file of an Entry.
type File struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// manifest is the first line of an entry's body: the entry without its
// files' bytes, which follow it in order, and the key it was stored under.
type manifest struct {
	Key         string               `json:"key"`
	Name        string               `json:"name"`
	Files       []fileSize           `json:"files"`
	Diagnostics compiler.Diagnostics `json:"diagnostics,omitempty"`
	Checked     *engine.Checked      `json:"checked,omitempty"`
}

type fileSize struct {
	Name string `json:"name"`
	Size int    `json:"size"`
}

// encode is the body of e stored under k.
func encode(k Key, e Entry) ([]byte, error) {
	m := manifest{Key: k.String(), Name: e.Name, Diagnostics: e.Diagnostics, Checked: e.Checked}
	size := 0
	for _, f := range e.Files {
		m.Files = append(m.Files, fileSize{f.Name, len(f.Data)})
		size += len(f.Data)
	}
	head, err := json.Marshal(m) // one line: json.Marshal escapes newlines
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(head)+1+size)
	b = append(append(b, head...), '\n')
	for _, f := range e.Files {
		b = append(b, f.Data...)
	}
	return b, nil
}

// decode is the entry in body b and the key it was stored under; ok is
// false when b is not an entry's body.
func decode(b []byte) (key string, e Entry, ok bool) {
	head, data, found := bytes.Cut(b, []byte{'\n'})
	var m manifest
	if !found || json.Unmarshal(head, &m) != nil {
		return "", Entry{}, false
	}
	e = Entry{Name: m.Name, Diagnostics: m.Diagnostics, Checked: m.Checked}
	for _, f := range m.Files {
		if f.Size < 0 || f.Size > len(data) {
			return "", Entry{}, false
		}
		e.Files = append(e.Files, File{Name: f.Name, Data: data[:f.Size:f.Size]})
		data = data[f.Size:]
	}
	return m.Key, e, len(data) == 0
}

// Cache is a directory of entries.
type Cache struct {
	Dir string
}

const magic = "stepline definition cache 2"

func (c Cache) path(k Key) string { return filepath.Join(c.Dir, k.String()+".def") }

// Get returns the entry stored under k: ErrMiss when there is none,
// ErrCorrupt when the file does not check (its header, length, hash or
// key), or the error reading it.
func (c Cache) Get(k Key) (Entry, error) {
	f, err := os.Open(c.path(k))
	if errors.Is(err, fs.ErrNotExist) {
		return Entry{}, ErrMiss
	}
	if err != nil {
		return Entry{}, fmt.Errorf("read cached definition: %w", err)
	}
	defer f.Close()
	raw, err := readAtMost(f, MaxEntryBytes+1024)
	if err != nil {
		return Entry{}, fmt.Errorf("read cached definition: %w", err)
	}
	b, err := unseal(raw)
	if err != nil {
		return Entry{}, err
	}
	key, e, ok := decode(b)
	if !ok || key != k.String() || e.Name == "" {
		return Entry{}, ErrCorrupt
	}
	for _, f := range e.Files {
		if !fileName(f.Name) {
			return Entry{}, ErrCorrupt
		}
	}
	return e, nil
}

// readAtMost reads f to its end, or max bytes of it, into a buffer sized
// by the file's size (io.ReadAll would grow one step by step to it, a
// 100-step pipeline's entry being about 250 KB).
func readAtMost(f *os.File, max int64) ([]byte, error) {
	size := int64(512)
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		size = min(fi.Size(), max) + 1 // one more: a file that grew is read on
	}
	b := make([]byte, 0, size)
	for int64(len(b)) < max {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):min(int64(cap(b)), max)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// fileName reports whether name is a plain file name: an entry never
// names a file outside the definitions directory.
func fileName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`) && filepath.Base(name) == name
}

// unseal checks the header of a stored entry and returns its body.
func unseal(raw []byte) ([]byte, error) {
	head, b, ok := bytes.Cut(raw, []byte{'\n'})
	if !ok {
		return nil, ErrCorrupt
	}
	fields := strings.Fields(string(head))
	if len(fields) != 6 || strings.Join(fields[:4], " ") != magic {
		return nil, ErrCorrupt
	}
	n, err := strconv.Atoi(fields[4])
	if err != nil || n != len(b) || n > MaxEntryBytes {
		return nil, ErrCorrupt
	}
	sum := sha256.Sum256(b)
	if fields[5] != hex.EncodeToString(sum[:]) {
		return nil, ErrCorrupt
	}
	return b, nil
}

// Put stores e under k, replacing what was there, and removes the oldest
// entries past MaxEntries.
func (c Cache) Put(k Key, e Entry) error {
	if !fileNames(e.Files) {
		return fmt.Errorf("cache definition: a file name that is not a plain name")
	}
	b, err := encode(k, e)
	if err != nil {
		return fmt.Errorf("cache definition: %w", err)
	}
	if len(b) > MaxEntryBytes {
		return fmt.Errorf("cache definition: %w", ErrTooLarge)
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("cache definition: %w", err)
	}
	if err := atomicfile.Write(c.path(k), append([]byte(header(b)), b...)); err != nil {
		return fmt.Errorf("cache definition: %w", err)
	}
	c.prune()
	return nil
}

// header is the first line of an entry whose body is b: what Get checks
// it against.
func header(b []byte) string {
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%s %d %s\n", magic, len(b), hex.EncodeToString(sum[:]))
}

func fileNames(fs []File) bool {
	return !slices.ContainsFunc(fs, func(f File) bool { return !fileName(f.Name) })
}

// prune removes the oldest entries past MaxEntries; failures only leave
// more entries.
func (c Cache) prune() {
	entries, err := os.ReadDir(c.Dir)
	if err != nil {
		return
	}
	type aged struct {
		name string
		mod  int64
	}
	var all []aged
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".def") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			all = append(all, aged{e.Name(), fi.ModTime().UnixNano()})
		}
	}
	if len(all) <= MaxEntries {
		return
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Compare(a.mod, b.mod) })
	for _, a := range all[:len(all)-MaxEntries] {
		os.Remove(filepath.Join(c.Dir, a.name))
	}
}
