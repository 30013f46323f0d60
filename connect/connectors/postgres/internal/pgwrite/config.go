package pgwrite

import (
	"errors"
	"fmt"
	"slices"
)

// Mode says how rows reach the table.
type Mode int

const (
	// Insert appends every row with COPY; a duplicate key fails the batch.
	Insert Mode = iota
	// Upsert inserts a row or updates the row of its primary key.
	Upsert
)

func (m Mode) String() string {
	switch m {
	case Insert:
		return "insert"
	case Upsert:
		return "upsert"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Config says which table a Writer writes and how.
type Config struct {
	// Schema of the table; empty finds the table through the search_path
	// and creates it in the first schema there.
	Schema string
	// Table is the table's name, as is (no quoting, case kept).
	Table string
	Mode  Mode
	// PKFields are the fields that make the primary key, in order. Upsert
	// needs them; AutoCreate declares them as the PRIMARY KEY.
	PKFields []string
	// AutoCreate creates a missing table from the first batch's fields.
	AutoCreate bool
	// AutoEvolve adds a nullable column for a field the table lacks.
	AutoEvolve bool
	// DeleteEnabled makes a tombstone delete its key's row (Upsert only);
	// without it tombstones are ignored.
	DeleteEnabled bool
}

// Row is one record to write: its key and value fields, decoded from JSON.
// A Tombstone deletes the row of Key (when Config.DeleteEnabled) and has
// no Value.
type Row struct {
	Key       map[string]any
	Value     map[string]any
	Tombstone bool
}

// The errors of this package, for errors.Is.
var (
	// ErrConfig: the Config cannot work.
	ErrConfig = errors.New("pgwrite: invalid config")
	// ErrWrongType: a value does not fit its column's type, or a field has
	// values of different types in one batch of a table to be created.
	ErrWrongType = errors.New("pgwrite: value of the wrong type")
	// ErrNoColumn: a field has no column and AutoEvolve is off.
	ErrNoColumn = errors.New("pgwrite: no such column")
	// ErrNoTable: the table does not exist and AutoCreate is off.
	ErrNoTable = errors.New("pgwrite: no such table")
	// ErrMissingKey: a record lacks a primary key field, or it is null.
	ErrMissingKey = errors.New("pgwrite: missing primary key field")
)

// RecordError is the failure of one record of a batch, found before
// anything was sent: a value of the wrong type, a missing or null primary
// key, a field without a column. Index is the record's position in the
// rows given to Write; Err wraps ErrWrongType, ErrMissingKey or
// ErrNoColumn and names table, column and record. The sink uses Index to
// say which topic, partition and offset failed, or to skip that record.
type RecordError struct {
	Index int
	Err   error
}

func (e *RecordError) Error() string { return e.Err.Error() }
func (e *RecordError) Unwrap() error { return e.Err }

// recordError wraps err as the failure of record i.
func recordError(i int, err error) error { return &RecordError{Index: i, Err: err} }

func (c *Config) validate() error {
	switch {
	case c.Table == "":
		return fmt.Errorf("%w: no table", ErrConfig)
	case c.Mode != Insert && c.Mode != Upsert:
		return fmt.Errorf("%w: unknown mode %v", ErrConfig, c.Mode)
	case c.Mode == Upsert && len(c.PKFields) == 0:
		return fmt.Errorf("%w: upsert needs primary key fields", ErrConfig)
	case c.DeleteEnabled && c.Mode != Upsert:
		return fmt.Errorf("%w: delete.enabled needs upsert mode", ErrConfig)
	}
	for i, f := range c.PKFields {
		if f == "" {
			return fmt.Errorf("%w: empty primary key field", ErrConfig)
		}
		if slices.Contains(c.PKFields[:i], f) {
			return fmt.Errorf("%w: primary key field %q twice", ErrConfig, f)
		}
	}
	return nil
}
