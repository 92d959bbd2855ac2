package core

import (
	"encoding/json"
	"time"
)

// MessageAppend is text streamed onto an entry: Text goes at byte Offset
// of the entry's text (Field "") or of its meta's "output" (Field
// "output", a tool call's streamed output). Appends of one entry are
// published in order; UpdatedAt is the entry's updated_at once Text is in
// (ADR 0050).
type MessageAppend struct {
	Seq       int64       `json:"seq"`
	TaskID    string      `json:"task_id"`
	Kind      MessageKind `json:"kind"`
	Field     string      `json:"field,omitempty"`
	Offset    int         `json:"offset"`
	Text      string      `json:"text"`
	UpdatedAt time.Time   `json:"updated_at"`
}

// AppendOutput is the Field of an append to a tool call's output.
const AppendOutput = "output"

// AppendResult says what applying an append did.
type AppendResult int

const (
	// AppendApplied: the text was appended.
	AppendApplied AppendResult = iota
	// AppendHeld: the entry already holds this text (a page read after
	// the append); nothing changed.
	AppendHeld
	// AppendGap: the entry does not reach the append's offset (an append
	// was missed): read the entry again.
	AppendGap
)

// Apply appends a to m when it continues what m holds.
func (a MessageAppend) Apply(m *Message) AppendResult {
	if a.Seq != m.Seq {
		return AppendGap
	}
	if a.Field == AppendOutput {
		cur := metaString(m.Meta, AppendOutput)
		switch {
		case len(cur) == a.Offset:
			m.Meta = setMetaString(m.Meta, AppendOutput, cur+a.Text)
		case a.Offset+len(a.Text) <= len(cur):
			return AppendHeld
		default:
			return AppendGap
		}
	} else {
		switch {
		case len(m.Text) == a.Offset:
			m.Text += a.Text
		case a.Offset+len(a.Text) <= len(m.Text):
			return AppendHeld
		default:
			return AppendGap
		}
	}
	if a.UpdatedAt.After(m.UpdatedAt) {
		m.UpdatedAt = a.UpdatedAt
	}
	return AppendApplied
}

func metaString(meta json.RawMessage, key string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(meta, &obj) != nil {
		return ""
	}
	var s string
	_ = json.Unmarshal(obj[key], &s)
	return s
}

// setMetaString sets one string member of a JSON object, keeping the
// others' bytes (as the store assembles an entry's output).
func setMetaString(meta json.RawMessage, key, s string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(meta, &obj) != nil || obj == nil {
		obj = map[string]json.RawMessage{}
	}
	b, _ := json.Marshal(s)
	obj[key] = b
	out, _ := json.Marshal(obj)
	return out
}
