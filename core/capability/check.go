package capability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The argument check, once for every caller: the bridge words mcp-go's
// schema refusals with it (mcpserve's afterCall hook) and the daemon checks
// every call with it, since an agent may call the daemon's MCP route
// directly with its token. It walks Param, from which InputSchema writes
// the schemas; they use only type, properties, required,
// additionalProperties:false, items, enum, minLength, minimum/maximum and
// minItems/maxItems, and the walk follows JSON Schema 2020-12 for that
// subset (a wrong type is the only error reported at its location; the
// other keywords there are all checked), so it agrees with mcp-go's
// engine on what is wrong (TestArgumentCheckEdges in mcpserve).

// ArgError is a refusal of a call's arguments, worded for the model that
// must fix its call: each violation at its argument, sorted.
type ArgError struct {
	Tool string
	Why  string
}

func (e *ArgError) Error() string { return "invalid arguments for " + e.Tool + ": " + e.Why }

// Check validates a call's raw JSON arguments against the tool's
// parameters and decodes them into a fresh argument struct (Tool.NewArgs).
// Empty or null arguments are the empty object. A refusal is an
// *ArgError.
func Check(t Tool, raw []byte) (any, error) {
	raw = orEmptyObject(raw)
	v, why := explain(t, raw)
	if why != "" {
		return nil, &ArgError{Tool: t.Name, Why: why}
	}
	if integral(v) {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return nil, &ArgError{Tool: t.Name, Why: err.Error()}
		}
	}
	args := t.NewArgs()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(args); err != nil {
		// Valid by the schema yet not decodable: an integer too large for
		// its field.
		return nil, &ArgError{Tool: t.Name, Why: strings.TrimPrefix(err.Error(), "json: ")}
	}
	return args, nil
}

// explain parses args and validates them against the tool's parameters:
// each violation described, sorted, or "" when they are valid.
func explain(t Tool, args []byte) (any, string) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "arguments are not valid JSON: " + err.Error()
	}
	var msgs []string
	root := Param{Type: "object", Props: t.Params}
	check(root, v, nil, func(where string, msg string) {
		msgs = append(msgs, describeAt(t, where, msg))
	})
	sort.Strings(msgs)
	return v, strings.Join(msgs, "; ")
}

func orEmptyObject(raw []byte) []byte {
	if a := bytes.TrimSpace(raw); len(a) == 0 || string(a) == "null" {
		return []byte("{}")
	}
	return raw
}

// integral rewrites in place the integers JSON Schema takes but
// encoding/json does not (10.0, 1e2) as plain integers, so that valid
// arguments decode, and reports whether it rewrote any. A fraction left
// in v is in no integer argument: the check refused those.
func integral(v any) bool {
	changed := false
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
				return x
			}
			if n, ok := new(big.Rat).SetString(string(x)); ok && n.IsInt() {
				changed = true
				return json.Number(n.Num().String())
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = walk(x[k])
			}
		}
		return v
	}
	walk(v)
	return changed
}

// describeAt words one violation at where (questions[0].prompt); an
// unknown argument at the top level also names the arguments the tool
// takes.
func describeAt(t Tool, where, msg string) string {
	if where != "" {
		return where + ": " + msg
	}
	if strings.HasPrefix(msg, "unknown argument") {
		if names := paramNames(t.Params); len(names) > 0 {
			return fmt.Sprintf("%s (%s takes %s)", msg, t.Name, strings.Join(names, ", "))
		}
		return fmt.Sprintf("%s (%s takes no arguments)", msg, t.Name)
	}
	return msg
}

// check reports each violation of p by v at path. Description, Default
// and BridgeDir constrain nothing.
func check(p Param, v any, path []string, report func(where, msg string)) {
	where := argPath(path)
	if got := jsonType(v); !typeMatches(p.Type, v) {
		if where == "" {
			report(where, "arguments must be a JSON object, not "+got)
			return
		}
		report(where, fmt.Sprintf("want %s, got %s", p.Type, got))
		return
	}
	checkEnum(p, v, where, report)
	switch p.Type {
	case "object":
		checkObject(p, v.(map[string]any), path, where, report)
	case "array":
		checkArray(p, v.([]any), path, where, report)
	case "string":
		// A required string must not be empty (minLength 1 in its schema).
		if p.Required && utf8.RuneCountInString(v.(string)) < 1 {
			report(where, "must not be empty")
		}
	case "integer":
		checkInteger(p, v.(json.Number), where, report)
	}
}

// checkEnum reports a value that is none of p's Enum, when it has one.
func checkEnum(p Param, v any, where string, report func(where, msg string)) {
	if len(p.Enum) == 0 {
		return
	}
	for _, e := range p.Enum {
		if s, ok := v.(string); ok && s == e {
			return
		}
	}
	report(where, fmt.Sprintf("want one of %s, got %s", strings.Join(p.Enum, ", "), jsonText(v)))
}

// checkObject reports the required properties m lacks and those p does
// not know (additionalProperties:false), then checks each it has.
func checkObject(p Param, m map[string]any, path []string, where string, report func(where, msg string)) {
	var missing, unknown []string
	known := map[string]bool{}
	for _, c := range p.Props {
		known[c.Name] = true
		if _, ok := m[c.Name]; !ok && c.Required {
			missing = append(missing, c.Name)
		}
	}
	for k := range m {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(missing) > 0 {
		report(where, "missing required argument "+strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		noun := "argument"
		if len(unknown) > 1 {
			noun = "arguments"
		}
		report(where, fmt.Sprintf("unknown %s %s", noun, strings.Join(unknown, ", ")))
	}
	for _, c := range p.Props {
		if cv, ok := m[c.Name]; ok {
			check(c, cv, childPath(path, c.Name), report)
		}
	}
}

// checkArray reports an array of fewer items than p's Min or more than
// its Max (minItems, maxItems), then checks each item.
func checkArray(p Param, a []any, path []string, where string, report func(where, msg string)) {
	if p.Min != nil && len(a) < *p.Min {
		report(where, fmt.Sprintf("give at least %d, not %d", *p.Min, len(a)))
	}
	if p.Max != nil && len(a) > *p.Max {
		report(where, fmt.Sprintf("give at most %d, not %d", *p.Max, len(a)))
	}
	if p.Items != nil {
		for i, item := range a {
			check(*p.Items, item, childPath(path, strconv.Itoa(i)), report)
		}
	}
}

// checkInteger reports an integer below p's Min or above its Max
// (minimum, maximum), compared exactly, however large.
func checkInteger(p Param, v json.Number, where string, report func(where, msg string)) {
	n, _ := new(big.Rat).SetString(string(v))
	if p.Min != nil && n.Cmp(big.NewRat(int64(*p.Min), 1)) < 0 {
		report(where, fmt.Sprintf("must be at least %d, not %s", *p.Min, n.RatString()))
	}
	if p.Max != nil && n.Cmp(big.NewRat(int64(*p.Max), 1)) > 0 {
		report(where, fmt.Sprintf("must be at most %d, not %s", *p.Max, n.RatString()))
	}
}

// childPath is path with one more step, never sharing path's array with
// a sibling's.
func childPath(path []string, step string) []string {
	return append(path[:len(path):len(path)], step)
}

// jsonType names v's JSON type as JSON Schema does.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// typeMatches reports whether v is of the schema type want; an integer is
// any number without a fractional part (1.0 included), as JSON Schema has
// it.
func typeMatches(want string, v any) bool {
	got := jsonType(v)
	if want == "integer" && got == "number" {
		n, ok := new(big.Rat).SetString(string(v.(json.Number)))
		return ok && n.IsInt()
	}
	return got == want
}

func argPath(segments []string) string {
	var b strings.Builder
	for _, s := range segments {
		if _, err := strconv.Atoi(s); err == nil && b.Len() > 0 {
			b.WriteString("[" + s + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func paramNames(ps []Param) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
