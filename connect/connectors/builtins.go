// Package connectors registers Runnel's built-in plugins: the connectors
// under connect/connectors/ and the transforms and predicates of
// connect/transforms. A program that embeds Connect calls
// RegisterBuiltins on its registry, then adds its own plugins.
package connectors

import (
	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors/datagen"
	"github.com/runnel-io/runnel/connect/connectors/file"
	"github.com/runnel-io/runnel/connect/connectors/http"
	"github.com/runnel-io/runnel/connect/connectors/postgres"
	"github.com/runnel-io/runnel/connect/transforms"
)

// RegisterBuiltins adds every built-in plugin to r.
func RegisterBuiltins(r *connect.Registry) error {
	for _, register := range []func(*connect.Registry) error{
		datagen.Register,
		file.Register,
		http.Register,
		postgres.Register,
		transforms.Register,
	} {
		if err := register(r); err != nil {
			return err
		}
	}
	return nil
}

// NewRegistry returns a registry with the converters and every built-in
// plugin.
func NewRegistry() *connect.Registry {
	r := connect.NewRegistry()
	if err := RegisterBuiltins(r); err != nil {
		panic(err) // the built-ins' names are fixed: a clash is a programming error
	}
	return r
}
