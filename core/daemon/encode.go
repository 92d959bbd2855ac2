package daemon

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/kandev/kandev/core"
)

//go:generate go run ./internal/taskgen

// flushAt is how much encoded output collects before it is written.
const flushAt = 256 * 1024

// writeTaskArray writes tasks as a JSON array followed by a newline, one
// task at a time, so a large listing never sits in memory twice.
//
// It is the hot path of `kandev task list --json`: each task is encoded by
// appendTask, which writes exactly the bytes json.Marshal(core.Task) would
// (encode_test.go proves it) without reflection or per-task allocations.
func writeTaskArray(w io.Writer, tasks []core.Task) error {
	ptrs := make([]*core.Task, len(tasks))
	for i := range tasks {
		ptrs[i] = &tasks[i]
	}
	return writeTaskPtrs(w, ptrs)
}

// writeTaskPtrs is writeTaskArray over the engine's snapshot.
func writeTaskPtrs(w io.Writer, tasks []*core.Task) error {
	encode := appendTask
	if !fastTaskJSON() {
		encode = func(b []byte, t *core.Task) ([]byte, error) { return appendMarshal(b, *t) }
	}
	buf := make([]byte, 0, flushAt+8*1024)
	buf = append(buf, '[')
	for i := range tasks {
		if i > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = encode(buf, tasks[i]); err != nil {
			return err
		}
		if len(buf) >= flushAt {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, ']', '\n')
	_, err := w.Write(buf)
	return err
}

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

// appendString writes s as a JSON string the way encoding/json does by
// default: '"' and '\\' backslash-escaped; \b \f \n \r \t in short form;
// other control characters, '<', '>' and '&' (HTML-safe output) as \u00XX;
// U+2028 and U+2029 as \u2028 and \u2029; invalid UTF-8 as \ufffd.
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

// fastTaskJSON reports whether appendTask still agrees with json.Marshal on
// a task with every field set. A field added to core.Task but not here
// makes it false: listings then fall back to encoding/json (slower, never
// wrong) and TestAppendTaskCoversEveryField fails until appendTask learns
// the field.
var fastTaskJSON = sync.OnceValue(func() bool {
	for _, t := range []core.Task{{}, filledTask()} {
		want, err := json.Marshal(t)
		if err != nil {
			return false
		}
		got, err := appendTask(nil, &t)
		if err != nil || !bytes.Equal(got, want) {
			return false
		}
	}
	return true
})

// filledTask is a task with every exported field, nested ones included,
// set to a value that needs escaping where it can.
func filledTask() core.Task {
	var t core.Task
	fillValue(reflect.ValueOf(&t).Elem(), 0)
	return t
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// fillValue sets v, and everything under it, to non-zero values.
func fillValue(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x<&>\"\u2028é")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		if depth < 4 {
			p := reflect.New(v.Type().Elem())
			fillValue(p.Elem(), depth+1)
			v.Set(p)
		}
	case reflect.Slice:
		switch {
		case v.Type() == rawType:
			v.Set(reflect.ValueOf(json.RawMessage(`{"k":[1,"<"]}`)))
		case v.Type().Elem().Kind() == reflect.Uint8:
			v.SetBytes([]byte("ab"))
		case depth < 6:
			s := reflect.MakeSlice(v.Type(), 2, 2)
			for i := range 2 {
				fillValue(s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String {
			m := reflect.MakeMap(v.Type())
			k := reflect.New(v.Type().Key()).Elem()
			fillValue(k, depth+1)
			e := reflect.New(v.Type().Elem()).Elem()
			fillValue(e, depth+1)
			m.SetMapIndex(k, e)
			v.Set(m)
		}
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(time.Date(2026, 2, 3, 4, 5, 6, 123456789, time.FixedZone("", 5*3600+1800))))
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				fillValue(f, depth+1)
			}
		}
	}
}
