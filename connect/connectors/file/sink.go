package file

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/runnel-io/runnel/connect"
)

func sinkPlugin() connect.Plugin {
	return connect.Plugin{
		Class:   "org.apache.kafka.connect.file.FileStreamSinkConnector",
		Aliases: []string{"FileStreamSink", "FileStreamSinkConnector", "file-sink"},
		Type:    connect.SinkPlugin,
		Version: connect.Version,
		Doc:     "Appends each record's value to a file as a line.",
		Config: connect.NewConfigDef(
			connect.ConfigKey{Name: keyFile, Type: connect.TypeString, Importance: connect.High, Group: "File",
				Doc: "The file to append to (created if missing); empty writes to standard output."},
		),
		NewSinkTask: func() connect.SinkTask { return &sinkTask{} },
	}
}

// sinkTask appends values as lines: strings as they are, bytes raw, null
// as "null", anything else as JSON. Flush fsyncs the file, so the offsets
// committed after it never run ahead of the data.
type sinkTask struct {
	f *os.File
	w *bufio.Writer
}

func (t *sinkTask) Start(_ context.Context, cfg connect.Config, _ connect.SinkTaskContext) error {
	path := cfg.String(keyFile)
	if path == "" {
		t.w = bufio.NewWriter(os.Stdout)
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	t.f, t.w = f, bufio.NewWriterSize(f, 256<<10)
	return nil
}

func (t *sinkTask) Put(_ context.Context, records []connect.Record) error {
	for i := range records {
		switch v := records[i].Value.(type) {
		case string:
			t.w.WriteString(v)
		case []byte:
			t.w.Write(v)
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("record %s-%d@%d: %w", records[i].Topic, records[i].Partition, records[i].Offset, err)
			}
			t.w.Write(b)
		}
		if err := t.w.WriteByte('\n'); err != nil {
			return err
		}
	}
	return nil
}

func (t *sinkTask) Flush(context.Context) error {
	if err := t.w.Flush(); err != nil {
		return err
	}
	if t.f != nil {
		return t.f.Sync()
	}
	return nil
}

func (t *sinkTask) Stop() error {
	if t.f == nil {
		return t.w.Flush()
	}
	err := t.w.Flush()
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	return err
}
