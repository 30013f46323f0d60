// Package file holds the file connectors: FileStreamSource reads lines
// (or JSON lines) that are appended to a file, following appends,
// truncation and rotation, and saves its byte position as the source
// offset; FileStreamSink writes each record's value as a line and fsyncs
// the file before offsets are committed. Register adds both to a registry.
package file

import "github.com/runnel-io/runnel/connect"

// Register adds the file connectors to r.
func Register(r *connect.Registry) error {
	if err := r.Register(sourcePlugin()); err != nil {
		return err
	}
	return r.Register(sinkPlugin())
}
