package configs

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Listener is one entry of listeners or advertised.listeners:
// NAME://host:port.
type Listener struct {
	Name string // upper case, e.g. PLAINTEXT
	Host string // "" binds all interfaces (listeners only)
	Port int    // 0 picks a free port (listeners only)
	// SecurityProtocol is the Name's protocol from
	// listener.security.protocol.map: PLAINTEXT, SSL, SASL_PLAINTEXT or
	// SASL_SSL. Filled in by ParseBroker.
	SecurityProtocol string
}

// Addr returns host:port for net.Listen or for clients.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// String returns the NAME://host:port form.
func (l Listener) String() string { return l.Name + "://" + l.Addr() }

// parseListeners parses a comma-separated NAME://host:port list.
func parseListeners(v string) ([]Listener, error) {
	items := splitList(v)
	if len(items) == 0 {
		return nil, errors.New("must list at least one NAME://host:port")
	}
	var out []Listener
	seen := map[string]bool{}
	for _, it := range items {
		name, addr, ok := strings.Cut(it, "://")
		if !ok {
			return nil, fmt.Errorf("%q must look like NAME://host:port", it)
		}
		if !validListenerName(name) {
			return nil, fmt.Errorf("listener name %q may contain only ASCII letters, digits and _", name)
		}
		name = strings.ToUpper(name)
		if seen[name] {
			return nil, fmt.Errorf("listener name %s appears twice", name)
		}
		seen[name] = true
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%q must look like NAME://host:port", it)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("port in %q must be between 0 and 65535", it)
		}
		out = append(out, Listener{Name: name, Host: host, Port: p})
	}
	return out, nil
}

func validListenerName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// securityProtocols are Kafka's; Runnel's server decides which it serves.
var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// parseProtocolMap parses listener.security.protocol.map.
func parseProtocolMap(v string) (map[string]string, error) {
	m := map[string]string{}
	for _, it := range splitList(v) {
		name, proto, ok := strings.Cut(it, ":")
		if !ok || !validListenerName(name) {
			return nil, fmt.Errorf("%q must look like NAME:PROTOCOL", it)
		}
		name, proto = strings.ToUpper(name), strings.ToUpper(proto)
		known := false
		for _, p := range securityProtocols {
			known = known || p == proto
		}
		if !known {
			return nil, fmt.Errorf("protocol %q of %s must be one of: %s", proto, name, strings.Join(securityProtocols, ", "))
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("listener name %s appears twice", name)
		}
		m[name] = proto
	}
	return m, nil
}

// Voter is one entry of controller.quorum.voters: id@host:port.
type Voter struct {
	ID   int32
	Host string
	Port int
}

// Addr returns host:port.
func (v Voter) Addr() string { return net.JoinHostPort(v.Host, strconv.Itoa(v.Port)) }

func parseVoters(v string) ([]Voter, error) {
	var out []Voter
	seen := map[int32]bool{}
	seenAddr := map[string]int32{}
	for _, it := range splitList(v) {
		id, addr, ok := strings.Cut(it, "@")
		if !ok {
			return nil, fmt.Errorf("%q must look like id@host:port", it)
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("voter id in %q must be a non-negative 32-bit integer", it)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%q must look like id@host:port", it)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("port in %q must be between 1 and 65535", it)
		}
		if seen[int32(n)] {
			return nil, fmt.Errorf("voter id %d appears twice", n)
		}
		seen[int32(n)] = true
		vt := Voter{ID: int32(n), Host: host, Port: p}
		// Two voters on one address would be one Raft transport endpoint
		// counted twice toward the quorum.
		a := strings.ToLower(vt.Addr())
		if other, dup := seenAddr[a]; dup {
			return nil, fmt.Errorf("voters %d and %d both use %s", other, n, vt.Addr())
		}
		seenAddr[a] = int32(n)
		out = append(out, vt)
	}
	return out, nil
}
