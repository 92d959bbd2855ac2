package daemon

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"sync"
	"time"

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
