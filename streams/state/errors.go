package state

import "errors"

var (
	// ErrClosed is returned by every operation on a closed DB.
	ErrClosed = errors.New("state: db closed")
	// ErrCorruptChangelog is returned by Restore for a changelog key that
	// does not have the store kind's format.
	ErrCorruptChangelog = errors.New("state: corrupt changelog record")
	// ErrKindMismatch is returned by every operation on a store handle whose
	// name is already registered in the DB as another kind of store.
	ErrKindMismatch = errors.New("state: store registered as another kind")
	// ErrCorruptDB is returned when the DB holds a key this package cannot read.
	ErrCorruptDB = errors.New("state: corrupt db")
)
