package configs

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

// LoadFile reads a broker config file and returns its settings as raw
// strings keyed by Kafka name, ready to be overlaid with flags and passed
// to ParseBroker. The format follows the extension:
//
//   - .yaml, .yml (and .json, a subset of YAML): a mapping. Keys are flat
//     Kafka names (num.partitions: 3) or nested maps joined with dots
//     (log: {retention: {ms: 1000}}); both styles may be mixed. Scalars of
//     any type become their text as written; a sequence of scalars becomes
//     a comma-separated list; null means "not set".
//   - .properties: Kafka's (Java's) properties format, key=value.
//
// Every key must be a broker config and every value valid for it. All
// problems are reported, joined, each as "file:line: ..." (wrapping
// ErrUnknownConfig or ErrInvalidConfig); a key set twice is an error.
func LoadFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &configError{msg: err.Error(), kinds: []error{ErrInvalidConfig, err}}
	}
	var entries []fileEntry
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		entries, err = parseYAML(data)
	case ".properties":
		entries, err = parseProperties(data)
	default:
		return nil, newError(ErrInvalidConfig, "%s: unknown config file type; use .yaml, .yml, .json or .properties", path)
	}
	if err != nil {
		return nil, newError(ErrInvalidConfig, "%s:%v", path, err)
	}

	out := make(map[string]string, len(entries))
	firstLine := map[string]int{}
	var errs []error
	fail := func(line int, err error) {
		var ce *configError
		if errors.As(err, &ce) {
			errs = append(errs, &configError{msg: fmt.Sprintf("%s:%d: %s", path, line, ce.msg), kinds: ce.kinds})
			return
		}
		errs = append(errs, newError(ErrInvalidConfig, "%s:%d: %v", path, line, err))
	}
	for _, e := range entries {
		if l, dup := firstLine[e.key]; dup {
			fail(e.line, fmt.Errorf("%s is set twice (first on line %d)", e.key, l))
			continue
		}
		firstLine[e.key] = e.line
		if e.err != nil {
			fail(e.line, e.err)
			continue
		}
		d, ok := brokerTable.byName[e.key]
		if !ok {
			fail(e.line, unknownBrokerConfig(e.key))
			continue
		}
		if e.null {
			continue
		}
		if _, err := d.Normalize(e.value); err != nil {
			fail(e.line, err)
			continue
		}
		out[e.key] = e.value
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// fileEntry is one key found in a file.
type fileEntry struct {
	key, value string
	line       int
	null       bool  // YAML null: not set
	err        error // the value cannot be turned into a string
}

// parseYAML flattens a YAML mapping into dotted keys. Its errors read
// "line: message" or ": message" (appended to "path:").
func parseYAML(data []byte) ([]fileEntry, error) {
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
	var out []fileEntry
	if err := flattenYAML(root, "", &out); err != nil {
		return nil, err
	}
	return out, nil
}

func flattenYAML(m *yaml.Node, prefix string, out *[]fileEntry) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], resolveAlias(m.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			return fmt.Errorf("%d: keys must be plain names (no merge keys or complex keys)", k.Line)
		}
		key := k.Value
		if prefix != "" {
			key = prefix + "." + key
		}
		e := fileEntry{key: key, line: k.Line}
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
					e.err = newError(ErrInvalidConfig, "%s: list items must be plain values", key)
					break
				}
				items = append(items, it.Value)
			}
			e.value = strings.Join(items, ",")
		case yaml.ScalarNode:
			e.null = v.Tag == "!!null"
			e.value = v.Value
		default:
			e.err = newError(ErrInvalidConfig, "%s: unsupported YAML value", key)
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
func parseProperties(data []byte) ([]fileEntry, error) {
	if !utf8.Valid(data) {
		return nil, errors.New(" the file is not valid UTF-8")
	}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	var out []fileEntry
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
		out = append(out, fileEntry{key: k, value: v, line: start})
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
