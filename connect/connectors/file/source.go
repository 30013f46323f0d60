package file

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/runnel-io/runnel/connect"
)

const (
	keyFile      = "file"
	keyTopic     = "topic"
	keyBatchSize = "batch.size"
	keyFormat    = "format"
	keyPollMs    = "poll.interval.ms"
	keyMaxLine   = "max.line.bytes"
)

func sourcePlugin() connect.Plugin {
	return connect.Plugin{
		Class:   "org.apache.kafka.connect.file.FileStreamSourceConnector",
		Aliases: []string{"FileStreamSource", "FileStreamSourceConnector", "file-source"},
		Type:    connect.SourcePlugin,
		Version: connect.Version,
		Doc:     "Reads the lines appended to a file into a topic.",
		Config: connect.NewConfigDef(
			connect.ConfigKey{Name: keyFile, Type: connect.TypeString, Required: true, Importance: connect.High, Group: "File",
				Doc: "The file to read; it may not exist yet, and may be truncated or rotated (renamed and created anew)."},
			connect.ConfigKey{Name: keyTopic, Type: connect.TypeString, Required: true, Importance: connect.High, Group: "File",
				Doc: "The topic to write to.", Check: connect.NonEmpty},
			connect.ConfigKey{Name: keyFormat, Type: connect.TypeString, Default: "lines", Importance: connect.Medium, Group: "File",
				Doc:   "lines: each line is a string value; json: each line is a JSON value (JSON lines), decoded as the schemaless json converter does.",
				Check: connect.OneOf("lines", "json"), Recommended: []string{"lines", "json"}},
			connect.ConfigKey{Name: keyBatchSize, Type: connect.TypeInt, Default: "2000", Importance: connect.Low, Group: "File",
				Doc: "The most lines one poll returns.", Check: connect.AtLeast(1)},
			connect.ConfigKey{Name: keyPollMs, Type: connect.TypeLong, Default: "200", Importance: connect.Low, Group: "File",
				Doc: "How often to look for appended data at the end of the file, in ms.", Check: connect.AtLeast(1)},
			connect.ConfigKey{Name: keyMaxLine, Type: connect.TypeInt, Default: "1048576", Importance: connect.Low, Group: "File",
				Doc: "The longest line accepted, in bytes; a longer one fails the task (or is skipped with errors.tolerance=all).", Check: connect.AtLeast(16)},
		),
		NewSourceTask: func() connect.SourceTask { return &sourceTask{} },
	}
}

// sourceTask tails one file. Its source partition is {"filename": path};
// its offset {"position": byte after the last line read, "inode": the
// file's inode}, so that a file replaced while the task was down is read
// from its start.
type sourceTask struct {
	path, topic string
	json        bool
	batch       int
	maxLine     int
	poll        time.Duration
	tolerate    bool
	log         *slog.Logger

	partition map[string]any
	f         *os.File
	r         *bufio.Reader
	inode     uint64
	pos       int64 // of the next byte r returns
	line      int64 // lines read from this file (for messages)
	pending   []byte
}

func (t *sourceTask) Start(_ context.Context, cfg connect.Config, tc connect.SourceTaskContext) error {
	t.path, t.topic = cfg.String(keyFile), cfg.String(keyTopic)
	t.json = cfg.String(keyFormat) == "json"
	t.batch, t.maxLine = cfg.Int(keyBatchSize), cfg.Int(keyMaxLine)
	t.poll = cfg.Millis(keyPollMs)
	t.tolerate = strings.EqualFold(cfg.String(connect.KeyErrorsTolerance), "all")
	t.log = tc.Logger()
	t.partition = map[string]any{"filename": t.path}
	off, err := tc.Offset(t.partition)
	if err != nil {
		return err
	}
	var pos int64
	var inode uint64
	if off != nil {
		p, _ := off["position"].(int64)
		i, _ := off["inode"].(int64)
		pos, inode = p, uint64(i)
	}
	if err := t.open(); err != nil {
		return err
	}
	if t.f == nil {
		return nil // not there yet: read it from the start once it is
	}
	st, err := t.f.Stat()
	if err != nil {
		return err
	}
	switch {
	case inode != 0 && inode != t.inode:
		t.log.Info("the file was replaced since the offset was saved; reading it from its start", "file", t.path)
	case pos > st.Size():
		t.log.Info("the file is shorter than the saved offset (truncated); reading it from its start", "file", t.path, "offset", pos)
	default:
		if _, err := t.f.Seek(pos, io.SeekStart); err != nil {
			return err
		}
		t.pos = pos
		t.r.Reset(t.f)
	}
	return nil
}

// open opens the file at path, if it exists, from its start.
func (t *sourceTask) open() error {
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening %s: %w", t.path, err)
	}
	if t.f != nil {
		_ = t.f.Close()
	}
	t.f, t.inode, t.pos, t.line, t.pending = f, inodeOf(f), 0, 0, nil
	if t.r == nil {
		t.r = bufio.NewReaderSize(f, 64<<10)
	} else {
		t.r.Reset(f)
	}
	return nil
}

func inodeOf(f *os.File) uint64 {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Ino
	}
	return 0
}

// Poll returns the complete lines that are there, up to batch.size; at
// the end of the file it waits for more, checking every poll.interval.ms
// whether the file grew, was truncated or was replaced.
func (t *sourceTask) Poll(ctx context.Context) ([]connect.Record, error) {
	var out []connect.Record
	tick := time.NewTicker(t.poll)
	defer tick.Stop()
	for {
		if t.f != nil {
			recs, err := t.read()
			if err != nil {
				return out, err
			}
			out = recs
			if len(out) > 0 {
				return out, nil
			}
			if err := t.followRotation(); err != nil {
				return nil, err
			}
		} else if err := t.open(); err != nil {
			return nil, err
		}
		if t.f != nil && t.r.Buffered() > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-tick.C:
		}
	}
}

// read reads up to batch.size complete lines.
func (t *sourceTask) read() ([]connect.Record, error) {
	var out []connect.Record
	for len(out) < t.batch {
		chunk, err := t.r.ReadSlice('\n')
		if len(chunk) > 0 {
			t.pending = append(t.pending, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(t.pending) > t.maxLine {
				return out, t.bad(fmt.Errorf("line is longer than %s (%d bytes)", keyMaxLine, t.maxLine), true)
			}
			continue
		}
		if err == io.EOF {
			return out, nil // a partial line waits for the rest
		}
		if err != nil {
			return out, fmt.Errorf("reading %s: %w", t.path, err)
		}
		line := bytes.TrimRight(t.pending, "\r\n")
		var rec connect.Record
		skip := false
		switch {
		case len(t.pending) > t.maxLine:
			err = fmt.Errorf("line is longer than %s (%d bytes)", keyMaxLine, t.maxLine)
		case t.json && len(bytes.TrimSpace(line)) == 0:
			skip = true // blank lines separate nothing in JSON lines
		case t.json:
			if rec.Value, err = connect.ParseJSON(line); err != nil {
				err = fmt.Errorf("not valid JSON: %v", err)
			}
		default:
			rec.Value = string(line)
		}
		if err != nil {
			if err := t.bad(err, false); err != nil {
				return out, err
			}
			skip = true
		}
		t.pos += int64(len(t.pending))
		t.line++
		t.pending = t.pending[:0]
		if skip {
			continue
		}
		rec.Topic, rec.SourcePartition = t.topic, t.partition
		rec.SourceOffset = map[string]any{"position": t.pos, "inode": int64(t.inode)}
		out = append(out, rec)
	}
	return out, nil
}

// bad reports a line that cannot become a record (the line being read:
// number t.line+1, starting at byte t.pos): it fails the task unless
// errors.tolerance is all. A line too long to buffer is skipped to its
// end.
func (t *sourceTask) bad(err error, skipRest bool) error {
	err = fmt.Errorf("%s: line %d (at byte %d): %w", t.path, t.line+1, t.pos, err)
	if !t.tolerate {
		return err
	}
	t.log.Warn("skipping a bad line (errors.tolerance=all)", "err", err)
	if skipRest {
		t.pos += int64(len(t.pending))
		t.pending = t.pending[:0]
		for {
			chunk, rerr := t.r.ReadSlice('\n')
			t.pos += int64(len(chunk))
			if !errors.Is(rerr, bufio.ErrBufferFull) {
				t.line++
				return nil // the rest of a line at EOF counts as skipped too
			}
		}
	}
	return nil
}

// followRotation checks, at the end of the file, whether the path now
// names another file (rotation: read the new one from its start; the old
// one was read to its end) or the file shrank (truncation: read it from
// its start).
func (t *sourceTask) followRotation() error {
	st, err := os.Stat(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // rotated away, not created anew yet
	}
	if err != nil {
		return fmt.Errorf("checking %s: %w", t.path, err)
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok && s.Ino != t.inode {
		t.log.Info("the file was rotated; reading the new one", "file", t.path)
		return t.open()
	}
	if st.Size() < t.pos {
		t.log.Info("the file was truncated; reading it from its start", "file", t.path)
		if _, err := t.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		t.r.Reset(t.f)
		t.pos, t.line, t.pending = 0, 0, nil
	}
	return nil
}

func (t *sourceTask) Stop() error {
	if t.f != nil {
		return t.f.Close()
	}
	return nil
}
