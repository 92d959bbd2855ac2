package mcpserve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kandev/kandev/core/capability"
)

// mcp-go checks every call against its tool's JSON Schema before the
// handler runs (WithInputSchemaValidation), but words a refusal for a
// programmer ("/limit: &{Got:500/1 Want:200/1}"). explainInvalid words
// it again for the model that must fix its call, on the refusal path
// only (bridge.afterCall). It walks capability.Param, from which the
// schemas are generated; they use only type, properties, required,
// additionalProperties:false, items, enum, minLength, minimum/maximum and
// minItems/maxItems, and the walk follows JSON Schema 2020-12 for that
// subset (a wrong type is the only error reported at its location; the
// other keywords there are all checked), so it agrees with mcp-go's
// engine on what is wrong. A keyword it does not know leaves mcp-go's own
// words (TestArgumentCheckEdges).

// explainInvalid validates args against the tool's parameters and
// describes each violation, sorted, or returns "" when they are valid.
func explainInvalid(t capability.Tool, args []byte) string {
	if a := bytes.TrimSpace(args); len(a) == 0 || string(a) == "null" {
		args = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "arguments are not valid JSON: " + err.Error()
	}
	var msgs []string
	root := capability.Param{Type: "object", Props: t.Params}
	check(root, v, nil, func(where string, msg string) {
		msgs = append(msgs, describeAt(t, where, msg))
	})
	sort.Strings(msgs)
	return strings.Join(msgs, "; ")
}

// describeAt words one violation at where (questions[0].prompt); an
// unknown argument at the top level also names the arguments the tool
// takes.
func describeAt(t capability.Tool, where, msg string) string {
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

// check reports each violation of p by v at path.
func check(p capability.Param, v any, path []string, report func(where, msg string)) {
	where := argPath(path)
	if got := jsonType(v); !typeMatches(p.Type, v) {
		if where == "" {
			report(where, "arguments must be a JSON object, not "+got)
			return
		}
		report(where, fmt.Sprintf("want %s, got %s", p.Type, got))
		return
	}
	if len(p.Enum) > 0 {
		found := false
		for _, e := range p.Enum {
			if s, ok := v.(string); ok && s == e {
				found = true
				break
			}
		}
		if !found {
			report(where, fmt.Sprintf("want one of %s, got %s", strings.Join(p.Enum, ", "), jsonText(v)))
		}
	}
	switch p.Type {
	case "object":
		m := v.(map[string]any)
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
				check(c, cv, append(path[:len(path):len(path)], c.Name), report)
			}
		}
	case "array":
		a := v.([]any)
		if p.Min != nil && len(a) < *p.Min {
			report(where, fmt.Sprintf("give at least %d, not %d", *p.Min, len(a)))
		}
		if p.Max != nil && len(a) > *p.Max {
			report(where, fmt.Sprintf("give at most %d, not %d", *p.Max, len(a)))
		}
		if p.Items != nil {
			for i, item := range a {
				check(*p.Items, item, append(path[:len(path):len(path)], strconv.Itoa(i)), report)
			}
		}
	case "string":
		// A required string must not be empty (minLength 1 in its schema).
		if p.Required && utf8.RuneCountInString(v.(string)) < 1 {
			report(where, "must not be empty")
		}
	case "integer":
		n, _ := new(big.Rat).SetString(string(v.(json.Number)))
		if p.Min != nil && n.Cmp(big.NewRat(int64(*p.Min), 1)) < 0 {
			report(where, fmt.Sprintf("must be at least %d, not %s", *p.Min, n.RatString()))
		}
		if p.Max != nil && n.Cmp(big.NewRat(int64(*p.Max), 1)) > 0 {
			report(where, fmt.Sprintf("must be at most %d, not %s", *p.Max, n.RatString()))
		}
	}
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

func paramNames(ps []capability.Param) []string {
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
