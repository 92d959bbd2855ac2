package engine

import (
	"reflect"
	"testing"
)

// compose wires every dependency of every area: an area's pointer or
// func field left nil would be a panic at the first call that needs it,
// found only by the path that makes it. Test hooks are the exception.
func TestComposeWiresEveryDependency(t *testing.T) {
	e := &Engine{k: &kernel{cache: newTaskCache(), live: newLiveRuns()}}
	e.compose()
	optional := map[string]bool{"Turns.loopEnded": true}
	ev := reflect.ValueOf(e).Elem()
	areas := 0
	for i := 0; i < ev.NumField(); i++ {
		f := ev.Field(i)
		if f.Kind() != reflect.Pointer || f.Type().Elem().Kind() != reflect.Struct || f.Type().Elem().Name() == "kernel" {
			continue
		}
		if f.IsNil() {
			t.Errorf("Engine.%s: not built", ev.Type().Field(i).Name)
			continue
		}
		areas++
		av := f.Elem()
		for j := 0; j < av.NumField(); j++ {
			name := av.Type().Name() + "." + av.Type().Field(j).Name
			switch fv := av.Field(j); fv.Kind() {
			case reflect.Pointer, reflect.Func:
				if fv.IsNil() && !optional[name] {
					t.Errorf("%s: not wired by compose", name)
				}
			}
		}
	}
	if areas < 12 {
		t.Errorf("compose built %d areas, want the 12", areas)
	}
}
