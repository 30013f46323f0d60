package metadata

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// ErrClosed is returned by a Store after Close.
var ErrClosed = errors.New("metadata: store closed")

const journalName = "journal"

// frameHeader is a journal frame's length (uint32) and CRC32C (uint32) of
// the JSON record that follows.
const frameHeader = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Store applies Records to the image and keeps them in a journal, so the
// image is rebuilt on restart. It is the single-node stand-in for the
// controller quorum's replicated log: Propose is the one way to change
// metadata.
type Store struct {
	fs     vfs.FS
	dir    string
	logger *slog.Logger
	image  atomic.Pointer[Image]

	mu struct {
		sync.Mutex
		journal  vfs.File
		size     int64
		closed   bool
		watchers []func(old, new *Image)
	}
}

// Open opens (or creates) the store in dir and replays its journal. A torn
// final frame, as a crash may leave, is cut off.
func Open(fs vfs.FS, dir string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if err := syncDir(fs, fs.PathDir(dir)); err != nil {
		return nil, err
	}
	s := &Store{fs: fs, dir: dir, logger: logger}
	path := fs.PathJoin(dir, journalName)
	data, err := readAll(fs, path)
	if err != nil {
		return nil, err
	}
	im, good, err := replay(data)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != good {
		// pebble's vfs has no truncate: rewrite the valid prefix and rename
		// it over the journal, which is atomic.
		logger.Warn("metadata journal has a torn tail; cutting it", "path", path, "size", len(data), "keep", good)
		if err := rewrite(fs, dir, path, data[:good]); err != nil {
			return nil, err
		}
	}
	f, err := fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("metadata: open journal: %w", err)
	}
	if err := syncDir(fs, dir); err != nil {
		f.Close()
		return nil, err
	}
	s.mu.journal = f
	s.mu.size = good
	s.image.Store(im)
	return s, nil
}

func readAll(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("metadata: open journal: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("metadata: read journal: %w", err)
	}
	return data, nil
}

func rewrite(fs vfs.FS, dir, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("metadata: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("metadata: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if err := fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	return syncDir(fs, dir)
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("metadata: open dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("metadata: sync dir: %w", err)
	}
	return nil
}

// replay applies every whole, valid frame of journal data and returns the
// image they build and the byte length of that valid prefix.
func replay(data []byte) (*Image, int64, error) {
	im := Empty()
	var pos int64
	for {
		rest := data[pos:]
		if len(rest) < frameHeader {
			return im, pos, nil
		}
		n := int64(binary.BigEndian.Uint32(rest))
		if n > int64(len(rest)-frameHeader) {
			return im, pos, nil
		}
		payload := rest[frameHeader : frameHeader+n]
		if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(rest[4:]) {
			return im, pos, nil
		}
		var r Record
		if err := json.Unmarshal(payload, &r); err != nil {
			return nil, 0, fmt.Errorf("metadata: journal record at byte %d: %w", pos, err)
		}
		next, err := im.Apply(r)
		if err != nil {
			return nil, 0, fmt.Errorf("metadata: journal record at byte %d: %w", pos, err)
		}
		im = next
		pos += frameHeader + n
	}
}

// Image returns the current image. It never changes once returned.
func (s *Store) Image() *Image { return s.image.Load() }

// Watch registers fn to be called after every change, with the images before
// and after, and returns the image those changes start from (the same shape
// as quorum.Quorum.Watch). Calls happen in order, one at a time, while
// proposals wait: fn must not call Propose.
func (s *Store) Watch(fn func(old, new *Image)) *Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.watchers = append(s.mu.watchers, fn)
	return s.image.Load()
}

// Propose applies recs, all or none: if any record does not apply, nothing
// is written and the error says why. The records are durable (fsynced) before
// the new image is published.
func (s *Store) Propose(ctx context.Context, recs ...Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return ErrClosed
	}
	old := s.image.Load()
	im := old
	var buf []byte
	for _, r := range recs {
		next, err := im.Apply(r)
		if err != nil {
			return err
		}
		im = next
		payload, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("metadata: encode record: %w", err)
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(payload)))
		buf = binary.BigEndian.AppendUint32(buf, crc32.Checksum(payload, castagnoli))
		buf = append(buf, payload...)
	}
	if _, err := s.mu.journal.WriteAt(buf, s.mu.size); err != nil {
		return fmt.Errorf("metadata: write journal: %w", err)
	}
	if err := s.mu.journal.Sync(); err != nil {
		return fmt.Errorf("metadata: sync journal: %w", err)
	}
	s.mu.size += int64(len(buf))
	s.image.Store(im)
	for _, w := range s.mu.watchers {
		w(old, im)
	}
	return nil
}

// Close closes the journal. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil
	}
	s.mu.closed = true
	return s.mu.journal.Close()
}
