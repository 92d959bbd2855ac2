package daemon

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/kandev/kandev/core"
)

// The JSON primitives the fast encoders are built from (encode_task.go,
// encode_parts.go, encode_usage.go): each writes exactly what encoding/json
// would for its value.

func appendMarshal(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// appendTime writes t quoted, as time.Time.MarshalJSON does: RFC 3339 with
// nanoseconds, trailing zeros trimmed. It reports false, having written
// something unusable, where MarshalJSON fails: a year outside [0,9999] or
// a zone offset of 24 hours or more.
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	if t.Location() != time.UTC {
		// Rare (the store keeps UTC): the general formatter.
		if y := t.Year(); y < 0 || y > 9999 {
			return b, false
		}
		if _, off := t.Zone(); off <= -24*3600 || off >= 24*3600 {
			return b, false
		}
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		return append(b, '"'), true
	}
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return b, false
	}
	hour, min, sec := t.Clock()
	b = append(b, '"',
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+month/10), byte('0'+month%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+min/10), byte('0'+min%10), ':',
		byte('0'+sec/10), byte('0'+sec%10))
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, 'Z', '"'), true
}

const hexDigits = "0123456789abcdef"

// plain marks the bytes a JSON string carries as they are: printable
// ASCII except '"', '\\' and the HTML-sensitive '<', '>', '&'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// appendBy writes a By as its stored form, a JSON string, without
// building that string: a task list writes one per task.
func appendBy(b []byte, by core.By) []byte {
	if _, ok := by.AsRef(); !ok {
		return appendString(b, by.String())
	}
	b = append(b, '"')
	b = append(b, by.Kind...)
	b = append(b, ':')
	n := len(b)
	b = appendString(b, by.Name)
	copy(b[n:], b[n+1:]) // the name's own opening quote
	return b[:len(b)-1]
}

// appendString writes s as a JSON string the way encoding/json does by
// default: '"' and '\\' backslash-escaped; \b \f \n \r \t in short form;
// other control characters, '<', '>' and '&' (HTML-safe output) as \u00XX;
// U+2028 and U+2029 as \u2028 and \u2029; invalid UTF-8 as \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// errNotFinite: encoding/json refuses NaN and infinities; appendTask then
// fails as json.Marshal would.
var errNotFinite = errors.New("json: unsupported value: a float that is not finite")

// appendFloat writes a float64 exactly as encoding/json does: the shortest
// form, in exponent notation below 1e-6 and from 1e21 on, with a
// one-digit negative exponent not padded.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, errNotFinite
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}
