package log

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// writeFileAtomic replaces dir/name with data: it writes dir/name.tmp,
// fsyncs it and renames it over name. The caller fsyncs dir afterwards to make
// the rename durable (once for several files).
func writeFileAtomic(fs vfs.FS, dir, name string, data []byte) error {
	tmp := fs.PathJoin(dir, name+tmpSuffix)
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("log: create %s: %w", tmp, err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("log: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("log: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("log: close %s: %w", tmp, err)
	}
	if err := fs.Rename(tmp, fs.PathJoin(dir, name)); err != nil {
		return fmt.Errorf("log: rename %s: %w", tmp, err)
	}
	return nil
}

// syncDir fsyncs a directory so that file creations, renames and removals in
// it are durable.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("log: open dir %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("log: fsync dir %s: %w", dir, err)
	}
	return nil
}

// readWholeFile returns the contents of a small file. A missing file returns
// an error for which isNotExist is true.
func readWholeFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, st.Size())
	if err := readAt(f, b, 0); err != nil {
		return nil, err
	}
	return b, nil
}

func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }

// The log-start-offset file: a version line "0" and the offset.

func encodeLogStartOffset(off int64) []byte {
	return fmt.Appendf(nil, "0\n%d\n", off)
}

func parseLogStartOffset(b []byte) (int64, error) {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "0" {
		return 0, fmt.Errorf("%w: malformed %s", ErrCorrupt, logStartOffsetFile)
	}
	off, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("%w: malformed %s offset %q", ErrCorrupt, logStartOffsetFile, lines[1])
	}
	return off, nil
}
