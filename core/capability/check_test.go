package capability

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Every field of Param is a rule that Check and InputSchema both carry
// out, or a field that constrains nothing: a field added to Param fails
// here until both know it and it is listed below. Each rule is shown to
// refuse an argument, and to accept it once the field is zero, so the
// refusal is that field's.
func TestCheckKnowsEveryParamField(t *testing.T) {
	rules := map[string]struct {
		p      Param  // the tool's one parameter, using the field
		bad    string // arguments the field's rule refuses; "" when it constrains nothing
		schema string // what InputSchema writes for it
	}{
		"Name":        {Param{Name: "x", Type: "string"}, `{"y":"a"}`, `"properties":{"x":`},
		"Type":        {Param{Name: "x", Type: "string"}, `{"x":1}`, `"type":"string"`},
		"Description": {Param{Name: "x", Type: "string", Description: "about x"}, "", `"description":"about x"`},
		"Required":    {Param{Name: "x", Type: "string", Required: true}, `{}`, `"required":["x"]`},
		"Enum":        {Param{Name: "x", Type: "string", Enum: []string{"a", "b"}}, `{"x":"c"}`, `"enum":["a","b"]`},
		"Default":     {Param{Name: "x", Type: "string", Default: "a"}, "", `"default":"a"`},
		"Min":         {Param{Name: "x", Type: "integer", Min: intp(1)}, `{"x":0}`, `"minimum":1`},
		"Max":         {Param{Name: "x", Type: "array", Max: intp(1)}, `{"x":[1,2]}`, `"maxItems":1`},
		"Items":       {Param{Name: "x", Type: "array", Items: &Param{Type: "integer"}}, `{"x":["a"]}`, `"items":{"type":"integer"}`},
		"Props": {Param{Name: "x", Type: "object", Props: []Param{{Name: "y", Type: "string", Required: true}}},
			`{"x":{}}`, `"required":["y"]`},
		// The bridge's, on the external surface (mcpserve's withBridgeDir).
		"BridgeDir": {Param{Name: "x", Type: "string", BridgeDir: true}, "", `"x":{"type":"string"}`},
	}
	rt := reflect.TypeFor[Param]()
	for i := range rt.NumField() {
		if _, ok := rules[rt.Field(i).Name]; !ok {
			t.Errorf("Param.%s is neither checked by Check nor written by InputSchema: handle it in check and paramSchema (or say it constrains nothing) and list it here", rt.Field(i).Name)
		}
	}
	for field, r := range rules {
		if _, ok := rt.FieldByName(field); !ok {
			t.Errorf("rule for Param.%s, which Param no longer has", field)
			continue
		}
		tool := func(p Param) Tool {
			return Tool{Name: "probe_kandev", Params: []Param{p}, args: func() any { return &map[string]any{} }}
		}
		schema, err := json.Marshal(tool(r.p).InputSchema())
		if err != nil || !strings.Contains(string(schema), r.schema) {
			t.Errorf("Param.%s: schema %s %v, want it to hold %s", field, schema, err, r.schema)
		}
		if r.bad == "" {
			continue
		}
		if _, err := Check(tool(r.p), []byte(r.bad)); err == nil {
			t.Errorf("Param.%s: Check accepted %s", field, r.bad)
		}
		if field == "Name" || field == "Type" {
			continue // no parameter without them
		}
		zero := r.p
		reflect.ValueOf(&zero).Elem().FieldByName(field).SetZero()
		if _, err := Check(tool(zero), []byte(r.bad)); err != nil {
			t.Errorf("Param.%s zero: Check refused %s (%v): the refusal is not the field's", field, r.bad, err)
		}
	}
}

// Check returns the tool's argument struct, decoded, or a refusal worded
// for the model.
func TestCheckDecodesOrRefuses(t *testing.T) {
	tool := func(name string) Tool {
		t.Helper()
		tl, ok := Lookup(name)
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		return tl
	}
	for _, raw := range []string{"", "null", " \n", "{}"} {
		got, err := Check(tool("get_task_kandev"), []byte(raw))
		if err != nil || !reflect.DeepEqual(got, &TaskIDArgs{}) {
			t.Errorf("get_task_kandev %q: %#v %v, want empty TaskIDArgs", raw, got, err)
		}
	}
	// JSON Schema's integers, 10.0 and 1e2 among them, decode.
	got, err := Check(tool("get_task_conversation_kandev"), []byte(`{"task_id":"k1","limit":10.0,"after":1e2}`))
	if err != nil || !reflect.DeepEqual(got, &ConversationArgs{TaskID: "k1", Limit: 10, After: 100}) {
		t.Errorf("conversation: %#v %v", got, err)
	}
	got, err = Check(tool("list_profiles_kandev"), nil)
	if err != nil || !reflect.DeepEqual(got, &NoArgs{}) {
		t.Errorf("list_profiles_kandev: %#v %v", got, err)
	}
	got, err = Check(tool("message_task_kandev"), []byte(`{"task_id":"k1","prompt":"p","comments":[{"file":"a.go","line":3,"text":"why"}]}`))
	if err != nil || !reflect.DeepEqual(got, &MessageTaskArgs{TaskID: "k1", Prompt: "p", Comments: []ReviewComment{{File: "a.go", Line: 3, Text: "why"}}}) {
		t.Errorf("message_task_kandev: %#v %v", got, err)
	}

	for _, tc := range []struct{ tool, raw, want string }{
		{"create_task_kandev", `{"title":"t","colour":"red"}`,
			"invalid arguments for create_task_kandev: unknown argument colour (create_task_kandev takes title, description, prompt, parent_id, autopilot, sandbox, profile, start, cwd, workspace, base)"},
		{"create_task_kandev", `{"title":null}`, "invalid arguments for create_task_kandev: title: want string, got null"},
		{"list_profiles_kandev", `{"x":1}`, "invalid arguments for list_profiles_kandev: unknown argument x (list_profiles_kandev takes no arguments)"},
		{"list_tasks_kandev", `{"limit":501,"status":"asleep"}`,
			"invalid arguments for list_tasks_kandev: limit: must be at most 500, not 501; status: want one of todo, in_progress, review, done, cancelled, got \"asleep\""},
		{"get_task_kandev", `{`, "invalid arguments for get_task_kandev: arguments are not valid JSON: unexpected EOF"},
		// Valid by the schema, too large for its field.
		{"get_task_conversation_kandev", `{"after":1e30}`,
			"invalid arguments for get_task_conversation_kandev: cannot unmarshal number 1000000000000000000000000000000 into Go struct field ConversationArgs.after of type int64"},
	} {
		got, err := Check(tool(tc.tool), []byte(tc.raw))
		var ae *ArgError
		if !errors.As(err, &ae) || err.Error() != tc.want || got != nil {
			t.Errorf("%s %s:\n got  %v (%T), %#v\n want %q", tc.tool, tc.raw, err, err, got, tc.want)
		}
	}
}
