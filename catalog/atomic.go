package catalog

import (
	"os"
	"path/filepath"
	"strings"
)

// writeFileAtomic replaces dir/name with data so that a crash leaves either the old or the new
// content: write a temporary file ".<name>.*.tmp" in dir, fsync it, rename it over dir/name, fsync
// dir. Leftover temporary files are ignored and removed by the next Open (removeTemps).
func writeFileAtomic(dir, name string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, "."+name+".*"+tempSuffix)
	if err != nil {
		return errorf(ErrInternal, "write %s: %w", filepath.Join(dir, name), err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		return errorf(ErrInternal, "write %s: %w", filepath.Join(dir, name), err)
	}
	return syncDir(dir)
}

// syncDir fsyncs a directory so that entries created, renamed or removed in it are durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return errorf(ErrInternal, "sync directory %s: %w", dir, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return errorf(ErrInternal, "sync directory %s: %w", dir, err)
	}
	return nil
}

// removeTemps removes the temporary files writeFileAtomic may have left in dir after a crash.
func removeTemps(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasPrefix(n, ".") && strings.HasSuffix(n, tempSuffix) {
			_ = os.Remove(filepath.Join(dir, n))
		}
	}
}
