package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// Parameters lists the parameters under a Parameter Store path (not
// recursively): name → value, at most max of them (more is an error).
// Package shared/secret's ParameterStore implements it.
type Parameters interface {
	ParametersByPath(ctx context.Context, path string, max int) (map[string]string, error)
}

// Objects reads whole S3 objects of at most maxBytes. Package
// shared/awsrest's S3 implements it.
type Objects interface {
	GetObject(ctx context.Context, bucket, key string, maxBytes int64) ([]byte, error)
}

// Listing is a deployment's bundle parameters, name → value.
type Listing map[string]string

// Loader reads the bundles a deployment published.
type Loader struct {
	Params  Parameters
	Objects Objects
	Prefix  string // the deployment's name prefix (STATE_MACHINE_PREFIX)
}

// List lists the bundle parameters.
func (l Loader) List(ctx context.Context) (Listing, error) {
	ps, err := l.Params.ParametersByPath(ctx, Path(l.Prefix), MaxBundles)
	if err != nil {
		return nil, fmt.Errorf("list the pipeline bundles under %s: %w", Path(l.Prefix), err)
	}
	return ps, nil
}

// Fetch reads the bundles of a listing, in parallel, and returns their
// files in file-name order. A file name found in two bundles is an error.
func (l Loader) Fetch(ctx context.Context, ls Listing) ([]File, error) {
	names := make([]string, 0, len(ls))
	for n := range ls {
		names = append(names, n)
	}
	sort.Strings(names)
	bundles := make([]Bundle, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bundles[i], errs[i] = l.fetch(ctx, n, ls[n])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return merge(names, bundles)
}

// merge returns the files of bundles (bundles[i] is named names[i]) in
// file-name order. A file name found in two bundles is an error.
func merge(names []string, bundles []Bundle) ([]File, error) {
	var files []File
	from := map[string]string{}
	for i, b := range bundles {
		for _, f := range b.Files {
			if other, ok := from[f.Name]; ok {
				return nil, fmt.Errorf("pipeline file %s is in two bundles, %s and %s", f.Name, other, names[i])
			}
			from[f.Name] = names[i]
			files = append(files, f)
		}
	}
	if len(files) > MaxFiles {
		return nil, fmt.Errorf("%d pipeline files in all, at most %d", len(files), MaxFiles)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// ReadDir reads the bundle documents in dir (its *.json files, as the CDK
// app writes them), as Fetch reads a deployment's: their files in
// file-name order, a name in two bundles an error.
func ReadDir(dir string) ([]File, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("read bundles in %s: %w", dir, err)
	}
	if len(paths) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("read bundles: %w", err)
		}
		return nil, fmt.Errorf("read bundles: no bundle document (*.json) in %s", dir)
	}
	if len(paths) > MaxBundles {
		return nil, fmt.Errorf("read bundles: %d bundle documents in %s, at most %d", len(paths), dir, MaxBundles)
	}
	sort.Strings(paths)
	bundles := make([]Bundle, len(paths))
	for i, path := range paths {
		raw, err := readBounded(path, MaxBundleBytes)
		if err == nil {
			bundles[i], err = Decode(raw)
		}
		if err != nil {
			return nil, fmt.Errorf("read bundle %s: %w", path, err)
		}
	}
	return merge(paths, bundles)
}

// readBounded reads a file of at most max bytes.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > max {
		return nil, fmt.Errorf("more than %d bytes", max)
	}
	return raw, nil
}

func (l Loader) fetch(ctx context.Context, param, url string) (Bundle, error) {
	bucket, key, err := ParseURL(url)
	if err != nil {
		return Bundle{}, fmt.Errorf("bundle %s: %w", param, err)
	}
	raw, err := l.Objects.GetObject(ctx, bucket, key, MaxBundleBytes)
	if err != nil {
		return Bundle{}, fmt.Errorf("bundle %s: %w", param, err)
	}
	b, err := Decode(raw)
	if err != nil {
		return Bundle{}, fmt.Errorf("bundle %s (s3://%s/%s): %w", param, bucket, key, err)
	}
	return b, nil
}

// Watcher keeps a value built from the deployment's pipeline files, and
// rebuilds it when the bundles change: at most every Every, the next
// Current lists the parameters again, and fetches and builds only when
// the listing differs from the one the value was built from. A failed
// listing or rebuild after the first is logged and the last good value
// kept (the next check tries again). Safe for concurrent use.
type Watcher[T any] struct {
	Loader Loader
	Every  time.Duration
	Build  func(files []File) (T, error)
	Now    func() time.Time // time.Now when nil
	Log    *slog.Logger     // slog.Default() when nil

	mu      sync.Mutex
	loaded  bool
	value   T
	listing Listing
	checked time.Time
}

// Current returns the value, loading it on the first call (whose error is
// returned) and checking for a change when Every has passed since the last
// check.
func (w *Watcher[T]) Current(ctx context.Context) (T, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if w.loaded && now.Sub(w.checked) < w.Every {
		return w.value, nil
	}
	ls, err := w.Loader.List(ctx)
	if err == nil && w.loaded && maps.Equal(ls, w.listing) {
		w.checked = now
		return w.value, nil
	}
	var v T
	if err == nil {
		v, err = w.load(ctx, ls)
	}
	if err != nil {
		if !w.loaded {
			return v, err
		}
		w.checked = now
		w.log().Error("pipelines not reloaded: the ones loaded before stay in use", "err", err)
		return w.value, nil
	}
	if w.loaded {
		w.log().Info("pipelines reloaded", "bundles", len(ls))
	}
	w.value, w.listing, w.checked, w.loaded = v, ls, now, true
	return v, nil
}

func (w *Watcher[T]) load(ctx context.Context, ls Listing) (T, error) {
	files, err := w.Loader.Fetch(ctx, ls)
	if err != nil {
		var zero T
		return zero, err
	}
	return w.Build(files)
}

func (w *Watcher[T]) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *Watcher[T]) log() *slog.Logger {
	if w.Log != nil {
		return w.Log
	}
	return slog.Default()
}
