package mcpserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/kandev/kandev/core/capability"
)

// mcp-go validates every call against the tool's schema before the handler
// runs (WithInputSchemaValidation), but words a failure for a programmer
// ("<root>: &{Properties:[x]}"). explainInvalid words it again for the
// model that must fix its call. It only runs on the failure path.

var english = message.NewPrinter(language.English)

// explainInvalid validates args against the tool's schema and describes
// each violation, or returns "" when it cannot tell.
func explainInvalid(t capability.Tool, args []byte) string {
	schema, err := json.Marshal(t.InputSchema())
	if err != nil {
		return ""
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return ""
	}
	c := jsonschema.NewCompiler()
	url := "mem:///kandev/" + t.Name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return ""
	}
	sch, err := c.Compile(url)
	if err != nil {
		return ""
	}
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = []byte("{}")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return "arguments are not valid JSON: " + err.Error()
	}
	err = sch.Validate(v)
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return ""
	}
	var msgs []string
	leaves(verr, func(e *jsonschema.ValidationError) {
		msgs = append(msgs, describe(t, e))
	})
	sort.Strings(msgs)
	return strings.Join(msgs, "; ")
}

func leaves(e *jsonschema.ValidationError, f func(*jsonschema.ValidationError)) {
	if len(e.Causes) == 0 {
		f(e)
		return
	}
	for _, c := range e.Causes {
		leaves(c, f)
	}
}

// describe words one violation, naming the argument by its path
// (questions[0].prompt).
func describe(t capability.Tool, e *jsonschema.ValidationError) string {
	where := argPath(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		noun := "argument"
		if len(k.Properties) > 1 {
			noun = "arguments"
		}
		msg := fmt.Sprintf("unknown %s %s", noun, strings.Join(k.Properties, ", "))
		if where != "" {
			return where + ": " + msg
		}
		if names := paramNames(t.Params); len(names) > 0 {
			return fmt.Sprintf("%s (%s takes %s)", msg, t.Name, strings.Join(names, ", "))
		}
		return fmt.Sprintf("%s (%s takes no arguments)", msg, t.Name)
	case *kind.Required:
		msg := "missing required argument " + strings.Join(k.Missing, ", ")
		if where != "" {
			return where + ": " + msg
		}
		return msg
	case *kind.Type:
		if where == "" {
			return fmt.Sprintf("arguments must be a JSON object, not %s", k.Got)
		}
		return fmt.Sprintf("%s: want %s, got %s", where, strings.Join(k.Want, " or "), k.Got)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		return fmt.Sprintf("%s: want one of %s, got %v", where, strings.Join(want, ", "), jsonText(k.Got))
	case *kind.MinLength:
		if k.Want == 1 {
			return where + ": must not be empty"
		}
		return fmt.Sprintf("%s: at least %d characters", where, k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("%s: give at least %d, not %d", where, k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("%s: give at most %d, not %d", where, k.Want, k.Got)
	case *kind.Minimum:
		return fmt.Sprintf("%s: must be at least %s, not %s", where, k.Want.RatString(), k.Got.RatString())
	case *kind.Maximum:
		return fmt.Sprintf("%s: must be at most %s, not %s", where, k.Want.RatString(), k.Got.RatString())
	}
	if where == "" {
		where = "arguments"
	}
	return where + ": " + e.ErrorKind.LocalizedString(english)
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
