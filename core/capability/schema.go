package capability

// InputSchema renders the tool's parameters as a JSON Schema object.
// additionalProperties is false at every level: unknown arguments are
// refused before any handler runs.
func (t Tool) InputSchema() map[string]any {
	return objectSchema(t.Params)
}

func objectSchema(params []Param) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, p := range params {
		props[p.Name] = paramSchema(p)
		if p.Required {
			required = append(required, p.Name)
		}
	}
	s := map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func paramSchema(p Param) map[string]any {
	if p.Type == "object" {
		s := objectSchema(p.Props)
		if p.Description != "" {
			s["description"] = p.Description
		}
		return s
	}
	s := map[string]any{"type": p.Type}
	if p.Description != "" {
		s["description"] = p.Description
	}
	if len(p.Enum) > 0 {
		s["enum"] = p.Enum
	}
	if p.Default != nil {
		s["default"] = p.Default
	}
	switch p.Type {
	case "integer":
		if p.Min != nil {
			s["minimum"] = *p.Min
		}
		if p.Max != nil {
			s["maximum"] = *p.Max
		}
	case "array":
		if p.Min != nil {
			s["minItems"] = *p.Min
		}
		if p.Max != nil {
			s["maxItems"] = *p.Max
		}
		if p.Items != nil {
			s["items"] = paramSchema(*p.Items)
		}
	case "string":
		if p.Required {
			s["minLength"] = 1
		}
	}
	return s
}
