package pgwrite

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// batch is a batch of rows checked, converted and, in Upsert mode, reduced
// to the last record of each key: ready to write.
type batch struct {
	groups  []*group
	deletes [][]any // primary key values of the rows to delete
}

// group is the rows of a batch that have the same columns.
type group struct {
	cols  []*column
	pkIdx []int   // position in cols of each primary key column; nil in Insert mode
	rows  [][]any // values in cols' order
}

// entry is one row to write, or with vals nil one to delete.
type entry struct {
	g    *group
	vals []any
	pk   []any
}

// prepare checks and converts rows for table t, which has a column for every
// field with a non-nil value.
func (w *Writer) prepare(t *table, rows []Row) (*batch, error) {
	var (
		groups  = map[string]*group{}
		order   []*group
		entries = make([]entry, 0, len(rows))
		last    map[string]int // Upsert: key → index in entries
		names   []string
		sig     []byte
		key     []byte
	)
	if w.cfg.Mode == Upsert {
		last = make(map[string]int, len(rows))
	}
	for i, r := range rows {
		var e entry
		if r.Tombstone {
			if !w.cfg.DeleteEnabled {
				continue
			}
			pk, err := w.tombstoneKey(t, r, i)
			if err != nil {
				return nil, err
			}
			e.pk = pk
		} else {
			// The row's fields that have a column, sorted: its group.
			names = names[:0]
			for f, v := range r.Key {
				if t.cols[f] != nil || v != nil {
					names = append(names, f)
				}
			}
			for f, v := range r.Value {
				if _, dup := r.Key[f]; !dup && (t.cols[f] != nil || v != nil) {
					names = append(names, f)
				}
			}
			slices.Sort(names)
			sig = sig[:0]
			for _, f := range names {
				sig = append(sig, f...)
				sig = append(sig, 0)
			}
			g := groups[string(sig)]
			if g == nil {
				var err error
				if g, err = w.newGroup(t, names, i); err != nil {
					return nil, err
				}
				groups[string(sig)] = g
				order = append(order, g)
			}
			e.g, e.vals = g, make([]any, len(g.cols))
			for j, c := range g.cols {
				v := field(r, c.name)
				cv, err := c.convert(v)
				if err != nil {
					return nil, recordError(i, fmt.Errorf("%w: table %s, column %s (%s), record %d: %s: %v",
						ErrWrongType, w.name, quote(c.name), c.typ, i, describe(v), err))
				}
				e.vals[j] = cv
			}
			if last != nil {
				e.pk = make([]any, len(g.pkIdx))
				for j, k := range g.pkIdx {
					if e.pk[j] = e.vals[k]; e.pk[j] == nil {
						return nil, recordError(i, fmt.Errorf("%w: table %s, record %d: primary key field %q is null",
							ErrMissingKey, w.name, i, g.cols[k].name))
					}
				}
			}
		}
		if last == nil {
			entries = append(entries, e)
			continue
		}
		key = appendKey(key[:0], e.pk)
		if at, ok := last[string(key)]; ok {
			entries[at] = e
		} else {
			last[string(key)] = len(entries)
			entries = append(entries, e)
		}
	}
	b := &batch{}
	for _, e := range entries {
		if e.vals == nil {
			b.deletes = append(b.deletes, e.pk)
		} else {
			e.g.rows = append(e.g.rows, e.vals)
		}
	}
	for _, g := range order {
		if len(g.rows) > 0 {
			b.groups = append(b.groups, g)
		}
	}
	return b, nil
}

// newGroup returns the group of rows with fields names (sorted), first
// met in record i.
func (w *Writer) newGroup(t *table, names []string, i int) (*group, error) {
	g := &group{}
	for _, f := range names {
		c := t.cols[f]
		if c == nil {
			// ensureTable added a column for every non-nil field.
			return nil, recordError(i, fmt.Errorf("%w: table %s has no column %s (record %d)", ErrNoColumn, w.name, quote(f), i))
		}
		g.cols = append(g.cols, c)
	}
	if w.cfg.Mode == Upsert {
		for _, pc := range t.pk {
			k := slices.Index(g.cols, pc)
			if k < 0 {
				return nil, recordError(i, fmt.Errorf("%w: table %s, record %d: no field %q", ErrMissingKey, w.name, i, pc.name))
			}
			g.pkIdx = append(g.pkIdx, k)
		}
	}
	return g, nil
}

// tombstoneKey returns the converted primary key values of tombstone r.
func (w *Writer) tombstoneKey(t *table, r Row, i int) ([]any, error) {
	pk := make([]any, len(t.pk))
	for j, c := range t.pk {
		v := field(r, c.name)
		if v == nil {
			return nil, recordError(i, fmt.Errorf("%w: table %s, tombstone record %d: no value for %q", ErrMissingKey, w.name, i, c.name))
		}
		cv, err := c.convert(v)
		if err != nil {
			return nil, recordError(i, fmt.Errorf("%w: table %s, column %s (%s), tombstone record %d: %s: %v",
				ErrWrongType, w.name, quote(c.name), c.typ, i, describe(v), err))
		}
		pk[j] = cv
	}
	return pk, nil
}

// field returns the value of a row's field, Key's first.
func field(r Row, name string) any {
	if v, ok := r.Key[name]; ok {
		return v
	}
	return r.Value[name]
}

// appendKey appends an encoding of converted primary key values that is
// equal for equal keys only.
func appendKey(b []byte, pk []any) []byte {
	for _, v := range pk {
		switch v := v.(type) {
		case int64:
			b = append(b, 'i')
			b = strconv.AppendInt(b, v, 10)
		case float64:
			if v == 0 {
				v = 0 // -0 is 0
			}
			b = append(b, 'f')
			b = strconv.AppendUint(b, math.Float64bits(v), 16)
		case bool:
			b = append(b, 'b')
			b = strconv.AppendBool(b, v)
		case string:
			b = append(b, 's')
			b = strconv.AppendInt(b, int64(len(v)), 10)
			b = append(b, ':')
			b = append(b, v...)
		case []byte:
			b = append(b, 'x')
			b = strconv.AppendInt(b, int64(len(v)), 10)
			b = append(b, ':')
			b = append(b, v...)
		default:
			s := fmt.Sprintf("%T:%v", v, v)
			b = append(b, 'o')
			b = strconv.AppendInt(b, int64(len(s)), 10)
			b = append(b, ':')
			b = append(b, s...)
		}
		b = append(b, 0)
	}
	return b
}
