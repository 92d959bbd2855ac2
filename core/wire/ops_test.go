package wire

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// TestRequestShapes pins how each kind of input travels to the paths and
// bodies the clients before the table sent: old clients talk to new
// daemons, and new clients to old ones.
func TestRequestShapes(t *testing.T) {
	since := time.Date(2026, 11, 30, 12, 0, 0, 5, time.FixedZone("x", 3600))
	// A profile's body is the whole profile, as it always was.
	profile := core.Profile{Name: "p", Command: "mock", Args: []string{"-v"}}
	profileJSON, _ := json.Marshal(profile)
	cases := []struct {
		name       string
		path, body string // body "" is none
		got        func() (string, any)
	}{
		{"none", "/v1/version", "", func() (string, any) { return Version.Request(None{}) }},
		{"list", "/v1/tasks", "", func() (string, any) { return ListTasks.Request(ListQuery{}) }},
		{"list all root", "/v1/tasks?all=1&root=a+b%2F", "", func() (string, any) { return ListTasks.Request(ListQuery{All: true, Root: "a b/"}) }},
		{"create", "/v1/tasks", `{"title":"t","start":true}`, func() (string, any) {
			return CreateTask.Request(api.CreateTaskInput{Title: "t", Start: true})
		}},
		{"key", "/v1/tasks/t-1%2Fx/archive", "", func() (string, any) { return ArchiveTask.Request(WithOptions("t-1/x", api.ArchiveTaskInput{})) }},
		{"empty key", "/v1/tasks//stop", "", func() (string, any) { return StopTask.Request(WithOptions("", api.StopTaskInput{})) }},
		{"keyed body", "/v1/tasks/t1/start", `{"prompt":"go"}`, func() (string, any) {
			return StartTask.Request(Keyed[api.StartTaskInput]{Key: "t1", In: api.StartTaskInput{Prompt: "go"}})
		}},
		{"keyed empty body", "/v1/tasks/t1/start", `{}`, func() (string, any) {
			return StartTask.Request(Keyed[api.StartTaskInput]{Key: "t1"})
		}},
		{"status", "/v1/tasks/t1/status", `{"status":"done"}`, func() (string, any) {
			return SetTaskStatus.Request(Keyed[StatusBody]{Key: "t1", In: StatusBody{Status: core.StatusDone}})
		}},
		{"person", "/v1/persons", `{"name":"ann"}`, func() (string, any) { return AddPerson.Request(api.AddPersonInput{Name: "ann"}) }},
		{"conversation", "/v1/tasks/t1/conversation?after=0", "", func() (string, any) {
			return Conversation.Request(Keyed[ConversationQuery]{Key: "t1"})
		}},
		{"conversation paged", "/v1/tasks/t1/conversation?after=3&before=-1&limit=50", "", func() (string, any) {
			return Conversation.Request(Keyed[ConversationQuery]{Key: "t1", In: ConversationQuery{After: 3, Before: -1, Limit: 50}})
		}},
		{"diff", "/v1/tasks/t1/diff", "", func() (string, any) { return TaskDiff.Request(Keyed[DiffQuery]{Key: "t1"}) }},
		{"diff patch", "/v1/tasks/t1/diff?patch=1", "", func() (string, any) {
			return TaskDiff.Request(Keyed[DiffQuery]{Key: "t1", In: DiffQuery{Patch: true}})
		}},
		{"usage", "/v1/usage", "", func() (string, any) { return Usage.Request(UsageQuery{}) }},
		{"usage since", "/v1/usage?by=day&since=2026-11-30T11%3A00%3A00.000000005Z", "", func() (string, any) {
			return Usage.Request(UsageQuery{By: "day", Since: since})
		}},
		{"follow appends", "/v1/events/s1/appends", `{"task_id":"t1"}`, func() (string, any) {
			return FollowAppends.Request(Keyed[AppendsBody]{Key: "s1", In: AppendsBody{TaskID: "t1"}})
		}},
		{"follow no appends", "/v1/events/s1/appends", `{"task_id":""}`, func() (string, any) {
			return FollowAppends.Request(Keyed[AppendsBody]{Key: "s1"})
		}},
		{"profile", "/v1/profiles/p", string(profileJSON), func() (string, any) {
			return AddProfile.Request(Keyed[core.Profile]{Key: "p", In: profile})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, body := c.got()
			if path != c.path {
				t.Errorf("path = %q, want %q", path, c.path)
			}
			if c.body == "" {
				if body != nil {
					t.Errorf("body = %#v, want none", body)
				}
				return
			}
			b, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, b, c.body) {
				t.Errorf("body = %s, want %s", b, c.body)
			}
		})
	}
}

func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var a, b map[string]any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestParseRoundTrip: what Request sends, Parse reads back as it was.
func TestParseRoundTrip(t *testing.T) {
	since := time.Date(2026, 11, 30, 12, 0, 0, 5, time.UTC)
	checkRoundTrip(t, Conversation, Keyed[ConversationQuery]{Key: "t 1", In: ConversationQuery{After: 3, Before: -1, Limit: 9}})
	checkRoundTrip(t, TaskDiff, Keyed[DiffQuery]{Key: "t1", In: DiffQuery{Patch: true}})
	checkRoundTrip(t, Usage, UsageQuery{By: "profile", Since: since})
	checkRoundTrip(t, ListTasks, ListQuery{All: true, Root: "r"})
	checkRoundTrip(t, StartTask, Keyed[api.StartTaskInput]{Key: "t1", In: api.StartTaskInput{Prompt: "p"}})
	checkRoundTrip(t, GetRole, Key("dev"))
	checkRoundTrip(t, Version, None{})
	checkRoundTrip(t, AddPerson, api.AddPersonInput{Name: "ann"})
	checkRoundTrip(t, StopTask, WithOptions("t1", api.StopTaskInput{}))
	checkRoundTrip(t, ArchiveTask, WithOptions("t1", api.ArchiveTaskInput{}))
	checkRoundTrip(t, DiscardTask, WithOptions("t1", api.DiscardTaskInput{}))
	checkRoundTrip(t, RemoveRole, WithOptions("dev", api.RemoveRoleInput{}))
	checkRoundTrip(t, RemoveProfile, WithOptions("p", api.RemoveProfileInput{}))
	checkRoundTrip(t, FollowAppends, Keyed[AppendsBody]{Key: "s1", In: AppendsBody{TaskID: "t1"}})
}

func checkRoundTrip[In, Out any](t *testing.T, op Op[In, Out], in In) {
	t.Helper()
	path, body := op.Request(in)
	u, err := url.Parse(path)
	if err != nil {
		t.Fatal(err)
	}
	var key string
	if w := op.Wildcard(); w != "" {
		// The wildcard is one segment: the one where the pattern has it.
		segs := strings.Split(op.Path, "/")
		for i, s := range segs {
			if s == "{"+w+"}" {
				key, _ = url.PathUnescape(strings.Split(u.EscapedPath(), "/")[i])
			}
		}
	}
	decoded := false
	got, err := op.Parse(key, u.Query(), func(v any) error {
		decoded = true
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		return json.Unmarshal(b, v)
	})
	if err != nil {
		t.Fatalf("%s: parse: %v", op.Name, err)
	}
	// Options are read from a body that may be missing (none set), once
	// there are any.
	var payload any = &got
	if k, ok := payload.(keyed); ok {
		payload = k.payload()
	}
	opts, _ := payload.(optional)
	if decoded != (body != nil) && (opts == nil || decoded != opts.read()) {
		t.Errorf("%s: body decoded %v, sent %v", op.Name, decoded, body != nil)
	}
	a, _ := json.Marshal(in)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Errorf("%s: parsed %s, sent %s", op.Name, b, a)
	}
}

// TestOptions: an operation's options travel as its body once one is set,
// and not at all while none is, as the operation sent before it had any.
func TestOptions(t *testing.T) {
	type opts struct {
		Force bool     `json:"force,omitempty"`
		Names []string `json:"names,omitempty"`
	}
	op := Op[Keyed[Options[opts]], None]{Name: "Test", Method: "POST", Path: "/v1/tasks/{id}/test"}
	if path, body := op.Request(WithOptions("t1", opts{})); path != "/v1/tasks/t1/test" || body != nil {
		t.Errorf("no options: %s %#v, want no body", path, body)
	}
	set := opts{Force: true, Names: []string{"a"}}
	path, body := op.Request(WithOptions("t1", set))
	b, _ := json.Marshal(body)
	if path != "/v1/tasks/t1/test" || string(b) != `{"force":true,"names":["a"]}` {
		t.Errorf("options: %s %s", path, b)
	}
	checkRoundTrip(t, op, WithOptions("t1", set))
	checkRoundTrip(t, op, WithOptions("t1", opts{}))
}

// TestParseRefusals keeps the words the daemon has always refused a bad
// query with.
func TestParseRefusals(t *testing.T) {
	for q, want := range map[string]string{
		"after=x":  `after: "x" is not a number`,
		"before=y": `before: "y" is not a number`,
		"limit=z":  `limit: "z" is not a number`,
	} {
		v, _ := url.ParseQuery(q)
		_, err := Conversation.Parse("t1", v, nil)
		if ce := core.AsError(err); ce == nil || ce.Code != core.CodeValidation || ce.Message != want {
			t.Errorf("%s: err = %v, want validation %q", q, err, want)
		}
	}
	v, _ := url.ParseQuery("since=yesterday")
	_, err := Usage.Parse("", v, nil)
	if ce := core.AsError(err); ce == nil || ce.Code != core.CodeValidation || ce.Message != `since "yesterday" is not an RFC 3339 time` {
		t.Errorf("since: err = %v", err)
	}
}

// TestTable: every row has a name and a pattern of its own, and a
// wildcard exactly when its input is Keyed.
func TestTable(t *testing.T) {
	names, patterns := map[string]bool{}, map[string]bool{}
	for _, r := range Ops() {
		p := r.Method + " " + r.Path
		if r.Name == "" || names[r.Name] || patterns[p] {
			t.Errorf("row %+v: empty or repeated name or pattern", r)
		}
		names[r.Name], patterns[p] = true, true
		if _, bespoke := Bespoke[p]; bespoke {
			t.Errorf("row %+v is also listed as bespoke", r)
		}
		if wild := strings.Contains(r.Path, "{"); wild != r.Keyed {
			t.Errorf("row %+v: wildcard %v but keyed input %v", r, wild, r.Keyed)
		}
	}
}
