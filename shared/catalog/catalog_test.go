package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/pipeline"
)

func TestEncodeDecode(t *testing.T) {
	files := []File{file("b.yml", "name: b\n"), file("a.yaml", "name: a\n<html> & \"quotes\"\n")}
	raw, err := Encode(files)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if b.Format != Format || len(b.Files) != 2 || !reflect.DeepEqual(b.Files, []File{files[1], files[0]}) {
		t.Errorf("decoded %+v, want both files in name order", b)
	}
	if !bytes.Contains(raw, []byte("<html> &")) {
		t.Errorf("the document escapes HTML: %s", raw)
	}
}

func TestFileNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"triage.yaml", true},
		{"triage.yml", true},
		{"Triage.YAML", true},
		{"my pipeline.yaml", true},
		{strings.Repeat("a", 250) + ".yaml", true}, // 255 bytes
		{strings.Repeat("a", 251) + ".yaml", false},
		{"triage.json", false},
		{"triage", false},
		{"../triage.yaml", false},
		{"dir/triage.yaml", false},
		{`dir\triage.yaml`, false},
		{"nul\x00.yaml", false},
		{"", false},
	} {
		_, err := Encode([]File{file(tc.name, "")})
		if (err == nil) != tc.ok {
			t.Errorf("Encode(%q): %v, want ok %v", tc.name, err, tc.ok)
		}
		raw := fmt.Appendf(nil, `{"stepline_bundle":2,"files":[{"name":%q,"source":"","model":{}}]}`, tc.name)
		if _, err := Decode(raw); (err == nil) != tc.ok {
			t.Errorf("Decode(%q): %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	if _, err := Encode([]File{file("a.yaml", ""), file("a.yaml", "")}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a name twice: %v", err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	big := make([]byte, MaxBundleBytes+1)
	for _, tc := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"too big", big, "at most"},
		{"an array", []byte(`[]`), "not a bundle document"},
		{"an unknown field", []byte(`{"stepline_bundle":2,"files":[],"extra":1}`), `not a bundle document: json: unknown field "extra"`},
		{"a newer format", []byte(`{"stepline_bundle":3,"files":[]}`), "format 3, want 2: deploy the core stack and the pipeline stacks again"},
		{"no format", []byte(`{"files":[]}`), "format 0, want 2"},
		// A deployment from before the models were bundled.
		{"format 1", []byte(`{"stepline_bundle":1,"files":[{"name":"a.yaml","source":"x"}]}`), "format 1, want 2: deploy the core stack and the pipeline stacks again"},
		{"no model", []byte(`{"stepline_bundle":2,"files":[{"name":"a.yaml","source":"x"}]}`), `file "a.yaml" has no compiled model: deploy its stack again`},
		{"a null model", []byte(`{"stepline_bundle":2,"files":[{"name":"a.yaml","source":"x","model":null}]}`), `file "a.yaml" has no compiled model`},
		{"a model that is no object", []byte(`{"stepline_bundle":2,"files":[{"name":"a.yaml","source":"x","model":"m"}]}`), `file "a.yaml" has no compiled model`},
		{"a syntax error", []byte("{\"stepline_bundle\":2,\n \"files\": [\n  {\"name\": \"a.yaml\",, }]}"), "line 3, column 21: invalid character ','"},
		{"a type error", []byte("{\"stepline_bundle\":2,\n \"files\": [{\"name\": 7}]}"), "line 2, column 21: json: cannot unmarshal number"},
		{"a format of the wrong type", []byte(`{"stepline_bundle":"2"}`), "line 1, column 22: json: cannot unmarshal string"},
		{"text after", []byte(`{"stepline_bundle":2,"files":[]} {}`), "line 1, column 34: invalid character '{' after top-level value"},
		{"a bracket after", []byte(`{"stepline_bundle":2,"files":[]}]`), "not a bundle document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decode(tc.raw); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode(%.40q): %v, want %q", tc.raw, err, tc.want)
			}
		})
	}
	// At the size bound: accepted (padded with spaces after the document).
	doc := []byte(`{"stepline_bundle":2,"files":[]}`)
	at := append(doc, bytes.Repeat([]byte(" "), MaxBundleBytes-len(doc))...)
	if _, err := Decode(at); err != nil {
		t.Errorf("a bundle of exactly %d bytes: %v", MaxBundleBytes, err)
	}
	// Files: at the bound and above.
	many := func(n int) []File {
		fs := make([]File, n)
		for i := range fs {
			fs[i] = file(fmt.Sprintf("p%05d.yaml", i), "")
		}
		return fs
	}
	if _, err := Encode(many(MaxFiles)); err != nil {
		t.Errorf("%d files: %v", MaxFiles, err)
	}
	if _, err := Encode(many(MaxFiles + 1)); err == nil {
		t.Errorf("%d files accepted", MaxFiles+1)
	}
}

// nested is a bundle whose one model nests depth levels in all: the
// bundle object, files, the file, the model and depth-4 arrays in it.
func nested(depth int) []byte {
	inner := strings.Repeat("[", depth-4) + strings.Repeat("]", depth-4)
	return []byte(`{"stepline_bundle":2,"files":[{"name":"a.yaml","source":"[[{\\\"]]","model":{"x":` + inner + `}}]}`)
}

func TestDecodeDepth(t *testing.T) {
	for _, tc := range []struct {
		depth int
		ok    bool
	}{
		{MaxDepth - 1, true},
		{MaxDepth, true},
		{MaxDepth + 1, false},
	} {
		_, err := Decode(nested(tc.depth))
		if (err == nil) != tc.ok {
			t.Errorf("depth %d: %v, want ok %v", tc.depth, err, tc.ok)
		}
		// The column of the bracket one level too deep.
		col := bytes.Index(nested(tc.depth), []byte(`"x":`)) + len(`"x":`) + MaxDepth - 4 + 1
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("line 1, column %d: nested deeper than %d levels", col, MaxDepth)) {
			t.Errorf("depth %d: %v", tc.depth, err)
		}
	}
	// Brackets in strings, escaped quotes among them, do not count.
	if err := checkDepth([]byte(`["[[[\"[[[", "\\", [1]]`), 2); err != nil {
		t.Errorf("brackets in strings counted: %v", err)
	}
	if err := checkDepth([]byte(`[[[`), 2); err == nil || !strings.Contains(err.Error(), "line 1, column 3") {
		t.Errorf("three levels within two: %v", err)
	}
}

func TestParseURL(t *testing.T) {
	b, k, err := ParseURL("s3://cdk-assets-1-us-east-1/abc/def.json")
	if err != nil || b != "cdk-assets-1-us-east-1" || k != "abc/def.json" {
		t.Errorf("ParseURL: %q %q %v", b, k, err)
	}
	for _, v := range []string{"", "s3://", "s3://bucket", "s3://bucket/", "s3:///key", "https://bucket/key", "bucket/key"} {
		if _, _, err := ParseURL(v); err == nil {
			t.Errorf("ParseURL(%q) accepted", v)
		}
	}
}

func TestPath(t *testing.T) {
	if got := ParameterName("Stepline-prod", "03"); got != "/stepline/Stepline-prod/pipelines/03" {
		t.Errorf("ParameterName: %q", got)
	}
}

// fakeAWS is Parameter Store and S3 in memory.
type fakeAWS struct {
	mu      sync.Mutex
	params  map[string]map[string]string // path → name → value
	objects map[string][]byte            // bucket/key → body
	lists   int
	gets    int
	listErr error
}

func (f *fakeAWS) ParametersByPath(_ context.Context, path string, max int) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.listErr != nil {
		return nil, f.listErr
	}
	if len(f.params[path]) > max {
		return nil, fmt.Errorf("more than %d parameters", max)
	}
	out := map[string]string{}
	for k, v := range f.params[path] {
		out[k] = v
	}
	return out, nil
}

func (f *fakeAWS) GetObject(_ context.Context, bucket, key string, maxBytes int64) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	b, ok := f.objects[bucket+"/"+key]
	if !ok {
		return nil, errors.New("NoSuchKey")
	}
	if int64(len(b)) > maxBytes {
		return nil, errors.New("body too large")
	}
	return b, nil
}

func (f *fakeAWS) publish(t *testing.T, bundle, key string, files ...File) {
	t.Helper()
	raw, err := Encode(files)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.params == nil {
		f.params, f.objects = map[string]map[string]string{}, map[string][]byte{}
	}
	p := Path("Dep")
	if f.params[p] == nil {
		f.params[p] = map[string]string{}
	}
	f.params[p][ParameterName("Dep", bundle)] = "s3://assets/" + key
	f.objects["assets/"+key] = raw
}

func TestLoaderFetch(t *testing.T) {
	aws := &fakeAWS{}
	aws.publish(t, "01", "k1.json", file("b.yaml", "b"), file("d.yaml", "d"))
	aws.publish(t, "00", "k0.json", file("a.yaml", "a"), file("c.yaml", "c"))
	l := Loader{Params: aws, Objects: aws, Prefix: "Dep"}
	ctx := context.Background()
	ls, err := l.List(ctx)
	if err != nil || len(ls) != 2 {
		t.Fatalf("List: %v %v", ls, err)
	}
	files, err := l.Fetch(ctx, ls)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "a.yaml,b.yaml,c.yaml,d.yaml" {
		t.Errorf("files %v, want all four in name order", names)
	}

	// The same file in two bundles.
	aws.publish(t, "02", "k2.json", file("c.yaml", "other"))
	ls, _ = l.List(ctx)
	if _, err := l.Fetch(ctx, ls); err == nil || !strings.Contains(err.Error(), "c.yaml is in two bundles") {
		t.Errorf("a file in two bundles: %v", err)
	}
	// A parameter that is no URL, an object that is gone, a bundle that is no bundle.
	for _, tc := range []struct{ value, want string }{
		{"not-a-url", "is not an s3://bucket/key URL"},
		{"s3://assets/missing.json", "NoSuchKey"},
		{"s3://assets/junk.json", "not a bundle document"},
	} {
		aws.objects["assets/junk.json"] = []byte("junk")
		ls := Listing{ParameterName("Dep", "09"): tc.value}
		if _, err := l.Fetch(ctx, ls); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/stepline/Dep/pipelines/09") {
			t.Errorf("%s: %v, want %q naming the parameter", tc.value, err, tc.want)
		}
	}
	// Too many files over all bundles, though each bundle is within.
	aws2 := &fakeAWS{}
	half := func(from int) []File {
		fs := make([]File, MaxFiles/2+1)
		for i := range fs {
			fs[i] = file(fmt.Sprintf("p%05d.yaml", from+i), "")
		}
		return fs
	}
	aws2.publish(t, "00", "a.json", half(0)...)
	aws2.publish(t, "01", "b.json", half(MaxFiles)...)
	l2 := Loader{Params: aws2, Objects: aws2, Prefix: "Dep"}
	ls, _ = l2.List(ctx)
	if _, err := l2.Fetch(ctx, ls); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("%d files in all: %v", MaxFiles+2, err)
	}
}

func TestWatcher(t *testing.T) {
	aws := &fakeAWS{}
	aws.publish(t, "00", "v1.json", file("a.yaml", "a1"))
	now := time.Unix(1_000_000, 0)
	builds := 0
	var logs bytes.Buffer
	w := &Watcher[string]{
		Loader: Loader{Params: aws, Objects: aws, Prefix: "Dep"},
		Every:  time.Minute,
		Build: func(files []File) (string, error) {
			builds++
			var s []string
			for _, f := range files {
				if f.Source == "bad" {
					return "", errors.New("does not compile")
				}
				s = append(s, f.Name+"="+f.Source)
			}
			return strings.Join(s, ","), nil
		},
		Now: func() time.Time { return now },
		Log: slog.New(slog.NewTextHandler(&logs, nil)),
	}
	ctx := context.Background()
	get := func() string {
		t.Helper()
		v, err := w.Current(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := get(); v != "a.yaml=a1" || builds != 1 || aws.lists != 1 {
		t.Fatalf("first: %q, %d builds, %d lists", v, builds, aws.lists)
	}
	// A new bundle version: not seen before Every has passed.
	aws.publish(t, "00", "v2.json", file("a.yaml", "a2"))
	now = now.Add(time.Minute - time.Nanosecond)
	if v := get(); v != "a.yaml=a1" || aws.lists != 1 {
		t.Errorf("just before Every: %q, %d lists, want the first value, no listing", v, aws.lists)
	}
	now = now.Add(time.Nanosecond)
	if v := get(); v != "a.yaml=a2" || builds != 2 || aws.lists != 2 {
		t.Errorf("at Every: %q, %d builds, %d lists, want the new bundle", v, builds, aws.lists)
	}
	// Nothing changed: listed again after Every, not fetched nor built.
	gets := aws.gets
	now = now.Add(time.Minute + time.Second)
	if v := get(); v != "a.yaml=a2" || builds != 2 || aws.gets != gets || aws.lists != 3 {
		t.Errorf("unchanged: %q, %d builds, %d gets (was %d), %d lists", v, builds, aws.gets, gets, aws.lists)
	}
	// A new bundle (a pipeline stack deployed for the first time).
	aws.publish(t, "01", "w1.json", file("b.yaml", "b1"))
	now = now.Add(time.Minute)
	if v := get(); v != "a.yaml=a2,b.yaml=b1" {
		t.Errorf("new bundle: %q", v)
	}
	// A version that does not build: the last good value stays, logged,
	// and is tried again only after Every.
	aws.publish(t, "01", "w2.json", file("b.yaml", "bad"))
	now = now.Add(time.Minute)
	if v := get(); v != "a.yaml=a2,b.yaml=b1" || !strings.Contains(logs.String(), "does not compile") {
		t.Errorf("bad version: %q, logs %s", v, logs.String())
	}
	lists := aws.lists
	now = now.Add(time.Second)
	if get(); aws.lists != lists {
		t.Errorf("listed again %d times before Every after a failure", aws.lists-lists)
	}
	// Listing fails: the value stays.
	aws.listErr = errors.New("ThrottlingException")
	now = now.Add(time.Minute)
	if v := get(); v != "a.yaml=a2,b.yaml=b1" || !strings.Contains(logs.String(), "ThrottlingException") {
		t.Errorf("listing failed: %q", v)
	}
	// Fixed: the next check after Every loads it.
	aws.listErr = nil
	aws.publish(t, "01", "w3.json", file("b.yaml", "b3"))
	now = now.Add(time.Minute)
	if v := get(); v != "a.yaml=a2,b.yaml=b3" {
		t.Errorf("fixed: %q", v)
	}
}

func TestWatcherFirstLoadFails(t *testing.T) {
	aws := &fakeAWS{listErr: errors.New("AccessDeniedException")}
	w := &Watcher[int]{Loader: Loader{Params: aws, Objects: aws, Prefix: "Dep"}, Every: time.Minute,
		Build: func([]File) (int, error) { return 1, nil }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if _, err := w.Current(context.Background()); err == nil || !strings.Contains(err.Error(), "AccessDeniedException") || !strings.Contains(err.Error(), "/stepline/Dep/pipelines") {
		t.Errorf("first load: %v, want the listing's error naming the path", err)
	}
	// Not cached: the next call tries again at once.
	aws.listErr = nil
	if v, err := w.Current(context.Background()); err != nil || v != 1 {
		t.Errorf("after the failure: %v %v", v, err)
	}
}

// file is a bundled file with a model of no pipeline: enough for what
// the bundle checks (a model is there), not for File.Pipeline.
func file(name, source string) File {
	return File{Name: name, Source: source, Model: json.RawMessage(`{}`)}
}

func TestModels(t *testing.T) {
	on := true
	p := &pipeline.Pipeline{Name: "triage", Stage: pipeline.StageProduction, Config: "fp1",
		Trigger: &pipeline.Trigger{Match: []pipeline.Match{{Field: "source", Op: "eq", Value: "grafana"}}, Dedup: &pipeline.Dedup{Enabled: &on}},
		Steps:   []pipeline.Node{&pipeline.Step{Name: "a", Executor: "scripted"}, &pipeline.Parallel{Name: "g"}}}
	f, err := NewFile("triage.yaml", "name: triage\n", p)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := Encode([]File{f})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := Pipelines(b.Files)
	if err != nil || len(ps) != 1 {
		t.Fatalf("Pipelines: %v, %v", ps, err)
	}
	got := ps[0]
	if got.Name != "triage" || got.Config != "fp1" || got.Pos.File != "triage.yaml" || got.Stage != pipeline.StageProduction ||
		!*got.Trigger.Dedup.Enabled || got.Trigger.Match[0].Value != "grafana" || len(got.Steps) != 2 {
		t.Errorf("decoded %+v", got)
	}
	if _, ok := got.Steps[1].(*pipeline.Parallel); !ok {
		t.Errorf("steps[1] is a %T", got.Steps[1])
	}

	if _, err := NewFile("triage.json", "", p); err == nil {
		t.Error("NewFile took a name that is no YAML file name")
	}
	if _, err := NewFile("triage.yaml", "", nil); err == nil || !strings.Contains(err.Error(), `file "triage.yaml"`) {
		t.Errorf("NewFile without a pipeline: %v", err)
	}
	bad := []File{f, {Name: "bad.yaml", Model: json.RawMessage(`{"pipeline": {"name": 1}, "step_kinds": []}`)}}
	if _, err := Pipelines(bad); err == nil || !strings.Contains(err.Error(), "pipeline file bad.yaml: pipeline model: pipeline: json: cannot unmarshal number") {
		t.Errorf("a bad model: %v", err)
	}
}

func TestReadDir(t *testing.T) {
	write := func(t *testing.T, dir, name string, raw []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	encode := func(t *testing.T, files ...File) []byte {
		t.Helper()
		raw, err := Encode(files)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	dir := t.TempDir()
	write(t, dir, "b.json", encode(t, file("b.yaml", "b"), file("d.yaml", "d")))
	write(t, dir, "a.json", encode(t, file("c.yaml", "c"), file("a.yaml", "a")))
	write(t, dir, "notes.txt", []byte("not a bundle"))
	files, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name+"="+f.Source)
	}
	if strings.Join(names, ",") != "a.yaml=a,b.yaml=b,c.yaml=c,d.yaml=d" {
		t.Errorf("files %v, want all four in name order", names)
	}

	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"no directory", func(t *testing.T, dir string) { os.Remove(dir) }, "no such file or directory"},
		{"no bundle", func(t *testing.T, dir string) {}, "no bundle document (*.json) in"},
		{"a file in two bundles", func(t *testing.T, dir string) {
			write(t, dir, "1.json", encode(t, file("a.yaml", "a")))
			write(t, dir, "2.json", encode(t, file("a.yaml", "again")))
		}, "pipeline file a.yaml is in two bundles"},
		{"a bundle that is none", func(t *testing.T, dir string) { write(t, dir, "1.json", []byte("{\n  junk")) }, "1.json: bundle: not a bundle document: line 2, column 3"},
		{"a bundle of format 1", func(t *testing.T, dir string) {
			write(t, dir, "1.json", []byte(`{"stepline_bundle": 1, "files": []}`))
		}, "format 1, want 2: deploy the core stack and the pipeline stacks again"},
		{"a bundle too big", func(t *testing.T, dir string) {
			write(t, dir, "1.json", append(encode(t), bytes.Repeat([]byte(" "), MaxBundleBytes)...))
		}, fmt.Sprintf("more than %d bytes", MaxBundleBytes)},
		{"too many bundles", func(t *testing.T, dir string) {
			for i := range MaxBundles + 1 {
				write(t, dir, fmt.Sprintf("%03d.json", i), encode(t))
			}
		}, fmt.Sprintf("%d bundle documents", MaxBundles+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bundles")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, dir)
			if _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadDir: %v, want %q", err, tc.want)
			}
		})
	}
	// At the bounds: MaxBundles documents; one of MaxBundleBytes.
	at := t.TempDir()
	for i := range MaxBundles - 1 {
		write(t, at, fmt.Sprintf("%03d.json", i), encode(t))
	}
	doc := encode(t, file("a.yaml", "a"))
	write(t, at, "big.json", append(doc, bytes.Repeat([]byte(" "), MaxBundleBytes-len(doc))...))
	if files, err := ReadDir(at); err != nil || len(files) != 1 {
		t.Errorf("%d bundles, one of %d bytes: %v, %v", MaxBundles, MaxBundleBytes, files, err)
	}
}
