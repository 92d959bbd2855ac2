package core

import (
	"encoding/json"
	"testing"
)

// Every stored form reads back to what it names and writes back to the
// same text; JSON carries that text, not a Ref's object.
func TestByStoredForms(t *testing.T) {
	for _, c := range []struct {
		stored string
		want   By
	}{
		{"person:operator", ByRef(OperatorRef())},
		{"person:alice", ByRef(PersonRef("alice"))},
		{"task:k3f9qa", ByRef(TaskRef("k3f9qa"))},
		{"role:eng", ByRef(RoleRef("eng"))},
		{"kandev", Kandev()},
		{"external", By{Ref{Kind: ByExternal}}},
		{"config", By{Ref{Kind: ByConfig}}},
		{"", By{}},
	} {
		got := ParseBy(c.stored)
		if got != c.want || got.Malformed() {
			t.Errorf("ParseBy(%q) = %+v (malformed %v), want %+v", c.stored, got, got.Malformed(), c.want)
		}
		if got.String() != c.stored {
			t.Errorf("ParseBy(%q).String() = %q", c.stored, got.String())
		}
		b, err := json.Marshal(got)
		if err != nil || string(b) != `"`+c.stored+`"` {
			t.Errorf("JSON of %q: %s, %v", c.stored, b, err)
		}
		var back By
		if err := json.Unmarshal(b, &back); err != nil || back != got {
			t.Errorf("JSON %s read back as %+v, %v", b, back, err)
		}
	}
	if !ParseBy("person:operator").IsOperator() || ParseBy("person:alice").IsOperator() || !ParseBy("task:k1").IsTask() ||
		!ParseBy("kandev").IsKandev() || !ParseBy("external").IsExternal() || !ParseBy("role:eng").IsRoleNamed("eng") {
		t.Error("a By's questions answer as its Ref's")
	}
	if l := ParseBy("person:operator").Label(); l != "you" {
		t.Errorf("operator's label %q", l)
	}
	if l := ParseBy("").Label(); l != "kandev" {
		t.Errorf("nobody's label %q", l)
	}
}

// A malformed stored ref is a defined fallback, not an error: it keeps its
// text (the wire shows what was stored), names nobody and matches no kind,
// so no decision takes it for a person, a task or a role.
func TestByMalformedStoredRef(t *testing.T) {
	for _, s := range []string{"role:", "robot:r2", "operator", ":x", "person"} {
		b := ParseBy(s)
		if !b.Malformed() {
			t.Errorf("ParseBy(%q) = %+v, not malformed", s, b)
		}
		if b.String() != s || b.Label() != s {
			t.Errorf("ParseBy(%q) gives back %q (label %q)", s, b.String(), b.Label())
		}
		if b.IsPerson() || b.IsTask() || b.IsRole() || b.IsOperator() || b.IsKandev() || b.IsExternal() {
			t.Errorf("ParseBy(%q) matches a kind: %+v", s, b)
		}
		if _, ok := b.AsRef(); ok {
			t.Errorf("ParseBy(%q) names a Ref", s)
		}
	}
}

// The fields that carry a By keep the wire shapes they had as strings: a
// message without an author omits it (a queued item's sender and a review
// comment's author: core/api's by_test.go).
func TestByFieldsKeepTheirWireShape(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{Message{Seq: 1, TaskID: "k1", Kind: MsgStatus, Text: "x"},
			`{"seq":1,"task_id":"k1","kind":"status","text":"x","created_at":"0001-01-01T00:00:00Z","updated_at":"0001-01-01T00:00:00Z"}`},
		{Message{Seq: 1, TaskID: "k1", Kind: MsgPrompt, Author: ParseBy("person:operator"), Text: "x"},
			`{"seq":1,"task_id":"k1","kind":"prompt","author":"person:operator","text":"x","created_at":"0001-01-01T00:00:00Z","updated_at":"0001-01-01T00:00:00Z"}`},
	} {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("%T: %s, %v\nwant %s", c.v, b, err, c.want)
		}
	}
}
