package mcpserve_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
)

// mcp-go's schema check and capability.Check (the daemon's, which words
// the bridge's refusals) agree on every call of a corpus built from the
// registry's parameters: each argument of each tool given a valid value,
// a wrong type, null, values at and past its bounds and enum, plus
// unknown arguments and arguments that are not an object. A refused call
// reads Check's words and never reaches the daemon; an accepted one
// reaches it and passes Check there.
func TestCheckAgreesWithMCPGo(t *testing.T) {
	var names []string
	for _, tool := range capability.All() {
		names = append(names, tool.Name)
	}
	host := &fakeHost{surface: api.ToolSurface{Surface: string(capability.KanbanTask), Tools: names, TaskID: "t1"}}
	r := startBridge(t, host, nil)
	r.initialize()
	cases, refused := 0, 0
	for _, tool := range capability.All() {
		for _, raw := range corpus(tool) {
			cases++
			_, checkErr := capability.Check(tool, []byte(raw))
			before := host.callCount()
			res := r.toolCall(tool.Name, json.RawMessage(raw))
			forwarded := host.callCount() > before
			switch {
			case checkErr == nil && !forwarded:
				t.Errorf("%s %s: Check accepts it, mcp-go refused it: %s", tool.Name, raw, resultText(res))
			case checkErr != nil && forwarded:
				t.Errorf("%s %s: mcp-go accepted it, Check refuses it: %v", tool.Name, raw, checkErr)
			case checkErr != nil:
				refused++
				if want := "VALIDATION_ERROR: " + checkErr.Error(); resultText(res) != want {
					t.Errorf("%s %s:\n got  %q\n want %q", tool.Name, raw, resultText(res), want)
				}
			}
		}
	}
	if refused == 0 || refused == cases {
		t.Errorf("%d of %d calls refused: the corpus does not test both sides", refused, cases)
	}
	t.Logf("%d calls, %d refused", cases, refused)
	if err := r.closeAndWait(); err != nil {
		t.Fatal(err)
	}
}

// corpus is raw arguments for a tool: a valid call, then each parameter
// in turn given each of its probe values, then calls no schema takes.
func corpus(tool capability.Tool) []string {
	base := map[string]json.RawMessage{}
	for _, p := range tool.Params {
		if p.Required {
			base[p.Name] = json.RawMessage(valid(p))
		}
	}
	encode := func(m map[string]json.RawMessage) string {
		b, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	out := []string{encode(base), `{"no_such_argument":1}`, `[1]`, `"x"`, `7`, `null`}
	for _, p := range tool.Params {
		for _, v := range probes(p) {
			m := map[string]json.RawMessage{}
			for k, bv := range base {
				m[k] = bv
			}
			m[p.Name] = json.RawMessage(v)
			out = append(out, encode(m))
		}
		if p.Required {
			m := map[string]json.RawMessage{}
			for k, bv := range base {
				if k != p.Name {
					m[k] = bv
				}
			}
			out = append(out, encode(m))
		}
	}
	return out
}

// valid is a value of p its schema takes.
func valid(p capability.Param) string {
	switch {
	case len(p.Enum) > 0:
		return fmt.Sprintf("%q", p.Enum[0])
	case p.Type == "string":
		return `"a"`
	case p.Type == "boolean":
		return "true"
	case p.Type == "integer":
		if p.Min != nil {
			return fmt.Sprint(*p.Min)
		}
		return "1"
	case p.Type == "array":
		n := 1
		if p.Min != nil {
			n = *p.Min
		}
		item := `"a"`
		if p.Items != nil {
			item = valid(*p.Items)
		}
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	case p.Type == "object":
		var fields []string
		for _, c := range p.Props {
			if c.Required {
				fields = append(fields, fmt.Sprintf("%q:%s", c.Name, valid(c)))
			}
		}
		return "{" + strings.Join(fields, ",") + "}"
	}
	return "null"
}

// probes are values of p at and around each rule of its schema.
func probes(p capability.Param) []string {
	vs := []string{valid(p), "null", `"1"`, "1", "true", "[]", "{}", "1.5"}
	switch p.Type {
	case "string":
		vs = append(vs, `""`, `"zzz"`, `" "`)
		for _, e := range p.Enum {
			vs = append(vs, fmt.Sprintf("%q", e))
		}
	case "integer":
		vs = append(vs, "0", "-1", "10.0", "1e2", "2.5")
		for _, b := range []*int{p.Min, p.Max} {
			if b != nil {
				vs = append(vs, fmt.Sprint(*b-1), fmt.Sprint(*b), fmt.Sprint(*b+1), fmt.Sprintf("%d.0", *b+1))
			}
		}
	case "array":
		item := `"a"`
		if p.Items != nil {
			item = valid(*p.Items)
			for _, bad := range probes(*p.Items) {
				vs = append(vs, "["+bad+"]")
			}
		}
		for _, b := range []*int{p.Min, p.Max} {
			if b != nil {
				for _, n := range []int{*b - 1, *b, *b + 1} {
					if n >= 0 {
						vs = append(vs, "["+strings.TrimSuffix(strings.Repeat(item+",", n), ",")+"]")
					}
				}
			}
		}
	case "object":
		vs = append(vs, `{"zz":1}`)
		for _, c := range p.Props {
			for _, v := range probes(c) {
				vs = append(vs, fmt.Sprintf("{%q:%s}", c.Name, v))
			}
		}
	}
	return vs
}

// On the external surface the bridge gives a BridgeDir argument (a new
// task's cwd) the directory it runs in when the call leaves it out; a
// task's session gets no such default (its task's directory is the
// daemon's to inherit).
func TestBridgeDirOnExternalSurface(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		taskID string
		args   map[string]any
		want   map[string]any
	}{
		{"", map[string]any{"title": "t"}, map[string]any{"title": "t", "cwd": wd}},
		{"", map[string]any{"title": "t", "cwd": "/elsewhere"}, map[string]any{"title": "t", "cwd": "/elsewhere"}},
		{"t1", map[string]any{"title": "t"}, map[string]any{"title": "t"}},
	} {
		surface := capability.Resolve(capability.Case{Surface: capability.External})
		host := &fakeHost{surface: api.ToolSurface{Surface: string(surface.Surface), Tools: surface.Names(), TaskID: tc.taskID}}
		r := startBridge(t, host, nil)
		r.initialize()
		if res := r.toolCall("create_task_kandev", tc.args); res["isError"] == true {
			t.Fatalf("create_task_kandev %v: %v", tc.args, res)
		}
		var got map[string]any
		if host.callCount() != 1 || json.Unmarshal([]byte(host.callAt(0).args), &got) != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("task %q, %v: forwarded %v, want %v", tc.taskID, tc.args, got, tc.want)
		}
		if err := r.closeAndWait(); err != nil {
			t.Fatal(err)
		}
	}
}
