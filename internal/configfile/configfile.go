// Package configfile reads the config files of every Runnel server — the
// broker's and Connect's worker and connector files — in YAML (and JSON, a
// subset of YAML) or Kafka's .properties format, into flat key/value
// entries with their line numbers. What the keys mean is the caller's
// business: it checks names and values and reports problems by line.
package configfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// ErrUnknownType is returned for a file whose extension is none of .yaml,
// .yml, .json and .properties.
var ErrUnknownType = errors.New("configfile: unknown config file type; use .yaml, .yml, .json or .properties")

// Read reads the file at path and returns its entries, in file order. The
// format follows the extension:
//
//   - .yaml, .yml (and .json, a subset of YAML): a mapping. Keys are flat
//     names (num.partitions: 3) or nested maps joined with dots
//     (log: {retention: {ms: 1000}}); both styles may be mixed. Scalars of
//     any type become their text as written; a sequence of scalars becomes
//     a comma-separated list; null means "not set" (Entry.Null).
//   - .properties: Kafka's (Java's) properties format, key=value.
//
// A file that cannot be read or parsed gives an error reading
// "path: ..." or "path:line: ..."; a value that cannot be turned into text
// is reported in its entry's Err. Duplicate keys are left to the caller.
func Read(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []Entry
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		entries, err = ParseYAML(data)
	case ".properties":
		entries, err = ParseProperties(data)
	default:
		return nil, fmt.Errorf("%s: %w", path, ErrUnknownType)
	}
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	return entries, nil
}

// Entry is one key found in a file, in file order.
type Entry struct {
	Key, Value string
	Line       int
	Null       bool  // YAML null: not set
	Err        error // the value cannot be turned into a string
}

// parseYAML flattens a YAML mapping into dotted keys. Its errors read
// "line: message" or ": message" (appended to "path:").
func ParseYAML(data []byte) ([]Entry, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // empty file
		}
		return nil, fmt.Errorf(" %v", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("%d: only one YAML document is allowed", extra.Line)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, nil
		}
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil // a file of comments only
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%d: the file must be a mapping of config names to values", root.Line)
	}
	var out []Entry
	if err := flattenYAML(root, "", &out); err != nil {
		return nil, err
	}
	return out, nil
}

func flattenYAML(m *yaml.Node, prefix string, out *[]Entry) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], resolveAlias(m.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			return fmt.Errorf("%d: keys must be plain names (no merge keys or complex keys)", k.Line)
		}
		key := k.Value
		if prefix != "" {
			key = prefix + "." + key
		}
		e := Entry{Key: key, Line: k.Line}
		switch v.Kind {
		case yaml.MappingNode:
			if err := flattenYAML(v, key, out); err != nil {
				return err
			}
			continue
		case yaml.SequenceNode:
			items := make([]string, 0, len(v.Content))
			for _, it := range v.Content {
				it = resolveAlias(it)
				if it.Kind != yaml.ScalarNode {
					e.Err = fmt.Errorf("%s: list items must be plain values", key)
					break
				}
				items = append(items, it.Value)
			}
			e.Value = strings.Join(items, ",")
		case yaml.ScalarNode:
			e.Null = v.Tag == "!!null"
			e.Value = v.Value
		default:
			e.Err = fmt.Errorf("%s: unsupported YAML value", key)
		}
		*out = append(*out, e)
	}
	return nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// parseProperties reads Java's properties format: logical lines (a
// trailing odd backslash continues a line), comments starting with # or !,
// key and value separated by '=', ':' or white space, backslash escapes
// (\t \n \r \f \uXXXX, and \x for any other x).
func ParseProperties(data []byte) ([]Entry, error) {
	if !utf8.Valid(data) {
		return nil, errors.New(" the file is not valid UTF-8")
	}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	var out []Entry
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continues(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if continues(line) {
			line = line[:len(line)-1]
		}
		key, rest := splitProperty(line)
		k, err := unescapeProperty(key)
		if err != nil {
			return nil, fmt.Errorf("%d: %v", start, err)
		}
		v, err := unescapeProperty(rest)
		if err != nil {
			return nil, fmt.Errorf("%d: %v", start, err)
		}
		out = append(out, Entry{Key: k, Value: v, Line: start})
	}
	return out, nil
}

// continues reports whether a line ends with an odd number of backslashes.
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line into its raw (still escaped) key and
// value.
func splitProperty(line string) (key, value string) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	key, rest := line[:end], line[end:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", errors.New(`malformed \uXXXX escape`)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", errors.New(`malformed \uXXXX escape`)
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}
