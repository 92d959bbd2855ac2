package mockagent

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseScript(t *testing.T) {
	text := strings.Join([]string{
		"[kandev:question] [kandev:wake]",
		"",
		"  Your child has a question.",
		"question_id: q1",
		"child_task_id:   abc123  ",
		"Note: capitalised keys are not variables",
		"mock: say hi ${question_id}",
		"   mock:think   deep  ",
		"question_id: q2",
		"empty_value:   ",
	}, "\n")
	s := parseScript(text)
	if s.first != "Your child has a question." {
		t.Errorf("first = %q", s.first)
	}
	wantDirs := []string{"say hi ${question_id}", "think   deep"}
	if !reflect.DeepEqual(s.directives, wantDirs) {
		t.Errorf("directives = %q, want %q", s.directives, wantDirs)
	}
	wantVars := map[string]string{"question_id": "q2", "child_task_id": "abc123"}
	if !reflect.DeepEqual(s.vars, wantVars) {
		t.Errorf("vars = %v, want %v", s.vars, wantVars)
	}
}

func TestParseScriptFirstLine(t *testing.T) {
	for text, want := range map[string]string{
		"":                              "",
		"\n\n":                          "",
		"mock: say hi\nlater":           "mock: say hi",
		"[kandev:wake]\n\nhello\nworld": "hello",
		"[kandev:message] from parent":  "from parent",
		"  padded  \r\nnext":            "padded",
	} {
		if got := parseScript(text).first; got != want {
			t.Errorf("first(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"a": "1", "b_c": "two"}
	got := expand("${a}-${b_c}-${missing}-$a-${a", vars)
	if want := "1-two-${missing}-$a-${a"; got != want {
		t.Errorf("expand = %q, want %q", got, want)
	}
}

func TestHasTag(t *testing.T) {
	if !hasTag("x\n[kandev:question]\ny", "question") {
		t.Error("tag not found")
	}
	if hasTag("[kandev:questions]", "question") {
		t.Error("prefix of another tag matched")
	}
}

func TestParseReaction(t *testing.T) {
	r, ok := parseReaction(`question: call t {"a":"b: c"}`)
	if !ok || r.Kind != "question" || r.Directive != `call t {"a":"b: c"}` {
		t.Errorf("got %+v, %v", r, ok)
	}
	r, ok = parseReaction("any: mock: say hi")
	if !ok || r.Kind != "any" || r.Directive != "say hi" {
		t.Errorf("got %+v, %v", r, ok)
	}
	for _, bad := range []string{"", "question", "question:", "two words: say hi", ": say hi"} {
		if _, ok := parseReaction(bad); ok {
			t.Errorf("parseReaction(%q) accepted", bad)
		}
	}
}

func TestSplitVerb(t *testing.T) {
	v, rest := splitVerb("call  tool {\"a\": 1} ")
	if v != "call" || rest != `tool {"a": 1}` {
		t.Errorf("got %q %q", v, rest)
	}
	if v, rest := splitVerb("tools"); v != "tools" || rest != "" {
		t.Errorf("got %q %q", v, rest)
	}
}

func TestTruncateRunes(t *testing.T) {
	if got := truncateRunes("héllo", 2); got != "hé" {
		t.Errorf("got %q", got)
	}
	if got := truncateRunes("abc", 5); got != "abc" {
		t.Errorf("got %q", got)
	}
}

func TestParseArgs(t *testing.T) {
	for in, want := range map[string]string{"": "{}", `{ "a" : [1, 2] }`: `{"a":[1,2]}`} {
		got, err := parseArgs(in)
		if err != nil || string(got) != want {
			t.Errorf("parseArgs(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"{", "[1]", "null", `"s"`, `{} {}`} {
		if _, err := parseArgs(bad); err == nil {
			t.Errorf("parseArgs(%q) accepted", bad)
		}
	}
}
