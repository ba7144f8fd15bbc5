// Package atomicfile replaces a file's content in one step: the data is
// written to a temporary file in the same directory, which is then
// renamed over the path, so that a process reading the file while another
// writes it sees the old content or the new one, never a part.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path's content with data, mode 0644. The directory must
// exist. On error the temporary file is removed and path is untouched.
func Write(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
