package harness

import (
	"fmt"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ClientLog is a kgo.Logger that counts the warnings and errors a client
// logs and keeps the first few. kgo retries produce and fetch errors on its
// own, so without it a misbehaving broker only shows as a lower number.
type ClientLog struct {
	mu struct {
		sync.Mutex
		count int
		first []string
	}
}

const keepLogLines = 5

// Level is kgo.LogLevelWarn: only warnings and errors are logged.
func (l *ClientLog) Level() kgo.LogLevel { return kgo.LogLevelWarn }

// Log records one line.
func (l *ClientLog) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.count++
	if len(l.mu.first) < keepLogLines {
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s: %s", level, msg)
		for i := 0; i+1 < len(keyvals); i += 2 {
			fmt.Fprintf(&sb, " %v=%v", keyvals[i], keyvals[i+1])
		}
		l.mu.first = append(l.mu.first, sb.String())
	}
}

// Count is the number of lines logged so far.
func (l *ClientLog) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.count
}

// First returns the first lines logged (at most 5).
func (l *ClientLog) First() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.mu.first...)
}
