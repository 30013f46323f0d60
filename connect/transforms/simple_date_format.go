package transforms

// A subset of Java's SimpleDateFormat patterns, for TimestampRouter:
// yyyyMMdd, yyyy-MM-dd'T'HH:mm:ss.SSS and the like. Go's time layouts
// cannot take them over letter by letter (a literal "1" or "2006" in
// quotes would read as a layout element), so patterns compile to tokens.

import (
	"fmt"
	"strconv"
	"time"
)

const supportedDateLetters = "y M d H h m s S D E a"

// dateFormat is a compiled pattern.
type dateFormat []dateToken

// dateToken is a pattern letter repeated count times, or literal text.
type dateToken struct {
	letter byte
	count  int
	lit    string
}

func compileDateFormat(p string) (dateFormat, error) {
	var f dateFormat
	lit := func(s string) {
		if n := len(f); n > 0 && f[n-1].letter == 0 {
			f[n-1].lit += s
			return
		}
		f = append(f, dateToken{lit: s})
	}
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			if i+1 < len(p) && p[i+1] == '\'' { // '' is a quote
				lit("'")
				i += 2
				continue
			}
			var s []byte
			j := i + 1
			for ; j < len(p); j++ {
				if p[j] == '\'' {
					if j+1 < len(p) && p[j+1] == '\'' {
						s = append(s, '\'')
						j++
						continue
					}
					break
				}
				s = append(s, p[j])
			}
			if j >= len(p) {
				return nil, fmt.Errorf("Unterminated quote in timestamp format %q", p)
			}
			lit(string(s))
			i = j + 1
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(p) && p[j] == c {
				j++
			}
			switch c {
			case 'y', 'M', 'd', 'H', 'h', 'm', 's', 'S', 'D', 'E', 'a':
			default:
				return nil, fmt.Errorf("unsupported pattern letter '%c' in timestamp format %q (supported: %s)", c, p, supportedDateLetters)
			}
			f = append(f, dateToken{letter: c, count: j - i})
			i = j
		default:
			lit(string(c))
			i++
		}
	}
	return f, nil
}

// append writes t in the format.
func (f dateFormat) append(b []byte, t time.Time) []byte {
	for _, tok := range f {
		switch tok.letter {
		case 0:
			b = append(b, tok.lit...)
		case 'y':
			if tok.count == 2 {
				b = appendPadded(b, t.Year()%100, 2)
			} else {
				b = appendPadded(b, t.Year(), tok.count)
			}
		case 'M':
			switch {
			case tok.count >= 4:
				b = append(b, t.Month().String()...)
			case tok.count == 3:
				b = append(b, t.Month().String()[:3]...)
			default:
				b = appendPadded(b, int(t.Month()), tok.count)
			}
		case 'd':
			b = appendPadded(b, t.Day(), tok.count)
		case 'H':
			b = appendPadded(b, t.Hour(), tok.count)
		case 'h':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			b = appendPadded(b, h, tok.count)
		case 'm':
			b = appendPadded(b, t.Minute(), tok.count)
		case 's':
			b = appendPadded(b, t.Second(), tok.count)
		case 'S': // milliseconds, as a number
			b = appendPadded(b, t.Nanosecond()/1e6, tok.count)
		case 'D':
			b = appendPadded(b, t.YearDay(), tok.count)
		case 'E':
			if tok.count >= 4 {
				b = append(b, t.Weekday().String()...)
			} else {
				b = append(b, t.Weekday().String()[:3]...)
			}
		case 'a':
			if t.Hour() < 12 {
				b = append(b, "AM"...)
			} else {
				b = append(b, "PM"...)
			}
		}
	}
	return b
}

// appendPadded writes n with leading zeros up to width digits.
func appendPadded(b []byte, n, width int) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	var digits [20]byte
	s := strconv.AppendInt(digits[:0], int64(n), 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}
