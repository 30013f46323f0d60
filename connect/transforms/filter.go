package transforms

// Filter: drop records (with a predicate, the ones it matches).

import "github.com/runnel-io/runnel/connect"

type filter struct{}

func newFilter(connect.Config) (connect.Transformation, error) { return filter{}, nil }

// Apply drops the record.
func (filter) Apply(*connect.Record) (bool, error) { return false, nil }
