package mcpserve_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/mcpserve"
)

// docs/mcp.md is generated from the capability registry:
//
//	go test ./mcpserve -run TestDocs -update
//
// and TestDocs fails when the file and the registry disagree.

var update = flag.Bool("update", false, "rewrite docs/mcp.md from the registry")

const docsPath = "../docs/mcp.md"

type toolError struct{ Code, When string }

// toolErrors are the errors each tool returns of its own, beyond the ones
// every call can get. Every registered tool needs an entry (nil: none), so
// a new tool cannot reach the docs without them.
var toolErrors = map[string][]toolError{
	"create_task_kandev": {
		{"VALIDATION_ERROR", "the title is too long; `parent_id` names no task, or an archived one; `profile` is unknown; `autopilot` is asked of a profile that cannot take kandev's MCP server"},
		{"FORBIDDEN", "`parent_id` is outside your own task's subtree: agents create tasks under their own task or its descendants"},
	},
	"list_tasks_kandev": {
		{"NOT_FOUND", "`root_id` or `parent_id` names no task"},
		{"VALIDATION_ERROR", "`root_id` or `parent_id` is an ambiguous id prefix; `cursor` is no longer in the listing (its task was archived): list again without it"},
	},
	"get_task_kandev": {
		{"NOT_FOUND", "`task_id` names no task"},
		{"VALIDATION_ERROR", "`task_id` is an ambiguous id prefix"},
	},
	"get_task_diff_kandev": {
		{"NOT_FOUND", "`task_id` names no task; the task's worktree is gone from disk"},
		{"VALIDATION_ERROR", "`task_id` is an ambiguous id prefix; the task runs in a shared directory (no worktree of its own or its parent's), or its worktree was discarded"},
		{"FORBIDDEN", "the task is neither yours nor in your subtree"},
	},
	"get_task_conversation_kandev": {
		{"NOT_FOUND", "`task_id` names no task"},
		{"VALIDATION_ERROR", "`task_id` is an ambiguous id prefix"},
	},
	"message_task_kandev": {
		{"VALIDATION_ERROR", "the prompt is empty; `task_id` is your own task; `reply_to_question_id` belongs to another task; a comment points at lines its diff does not show (each names its file and the lines the hunks show), or the task has no worktree of its own: nothing is sent"},
		{"NOT_FOUND", "`task_id` or `reply_to_question_id` names nothing"},
		{"FORBIDDEN", "`delivery_mode` interrupt from a task that is not the direct parent; a reply to a question that is not yours to answer (the operator's, or another parent's); the external surface"},
		{"CONFLICT", "the task is archived or cancelled; its queue is full (`details.queued` lists it); the question is no longer pending"},
	},
	"open_pull_request_kandev": {
		{"FORBIDDEN", "the task is not your own"},
		{"UNAVAILABLE", "gh is not installed on the daemon's PATH (the message names it), not logged in, or cannot reach the host (the branch is pushed all the same; the message says which, and what to do)"},
		{"CONFLICT", "the repository has no remote origin; the branch has nothing to push; the remote refused the push; the host has no such repository (or the remote is not on it); the host refused the pull request"},
	},
	"get_pull_request_comments_kandev": {
		{"NOT_FOUND", "your task's branch has no pull request"},
		{"UNAVAILABLE", "gh is not installed on the daemon's PATH, not logged in, or cannot reach the host"},
	},
	"open_merge_request_kandev": {
		{"FORBIDDEN", "the task is not your own"},
		{"UNAVAILABLE", "glab is not installed on the daemon's PATH (the message names it), not logged in, or cannot reach the host (the branch is pushed all the same; the message says which)"},
		{"CONFLICT", "the repository has no remote origin; the branch has nothing to push; the remote refused the push; the host has no such repository (or the remote is not on it); the host refused the merge request"},
	},
	"get_merge_request_comments_kandev": {
		{"NOT_FOUND", "your task's branch has no merge request"},
		{"UNAVAILABLE", "glab is not installed on the daemon's PATH, not logged in, or cannot reach the host"},
	},
	"stop_task_kandev": {
		{"NOT_FOUND", "`task_id` names no task"},
		{"FORBIDDEN", "you are not the task's direct parent"},
	},
	"handoff_task_kandev": {
		{"VALIDATION_ERROR", "`to` is empty; `to` is \"back\" but nobody handed the task over; the role runs a profile that does not exist"},
		{"NOT_FOUND", "`to` names no role or person; `task_id` names no task"},
		{"FORBIDDEN", "the task is neither yours nor in your subtree"},
		{"CONFLICT", "the task is done; it is already with that holder; your own task is no longer with your role (`details.assignee` names who holds it now)"},
	},
	"set_task_status_kandev": {
		{"VALIDATION_ERROR", "`status` is not a status"},
		{"NOT_FOUND", "`task_id` names no task"},
		{"FORBIDDEN", "the task is not in your subtree; you marked your own task done (hand it on for sign-off instead)"},
		{"CONFLICT", "the task cannot move from its status to that one; your own task is no longer with your role"},
	},
	"list_roles_kandev":    nil,
	"list_profiles_kandev": nil,
	"save_profile_kandev": {
		{"VALIDATION_ERROR", "a bad profile name or env entry; a command reserved for built-in profiles"},
	},
	"remove_profile_kandev": {
		{"NOT_FOUND", "no profile of that name"},
		{"VALIDATION_ERROR", "the profile is built in (add one of that name to override it instead)"},
	},
	"set_task_title_kandev": {
		{"VALIDATION_ERROR", "the title is empty or too long"},
	},
	capability.AskUser: {
		{"VALIDATION_ERROR", "a question without a prompt; options other than none or 2-6; an option without a label"},
		{"CONFLICT", "a newer call asked the same pending question again (answer that call instead); the turn that made the call ended, or the agent reported it failed, so its answer comes as the next message"},
		{"UNAVAILABLE", "the wait was cut off (the client cancelled or went away): the question stays pending and its answer arrives as your next message"},
		{"INTERNAL_ERROR", "the daemon shut down during the wait: the question stays pending and its answer arrives as your next message"},
	},
	capability.AskParent: {
		{"VALIDATION_ERROR", "a question without a prompt; options other than none or 2-6; an option without a label"},
		{"FORBIDDEN", "the task has no parent (an autopilot root), or is not on autopilot"},
	},
}

var surfaceWho = map[capability.Surface]string{
	capability.KanbanTask:    "an agent working a task in the task tree",
	capability.OfficeTask:    "an agent working a task as a named role with a manager",
	capability.Configuration: "an agent that edits kandev's own configuration",
	capability.External:      "an agent CLI a person runs by hand, with no session token (`kandev mcp` without `KANDEV_TOKEN`)",
}

var groupWhen = map[capability.Group]string{
	capability.GroupTitle:    "the task was created without a title, so its title is a placeholder its agent should replace",
	capability.GroupQuestion: "always on a task surface, with the one tool the question rule allows (an autopilot root gets none)",
	capability.GroupProvider: "the task's repository has a GitHub remote (origin), or a GitLab one and glab is on PATH",
}

var codeMeaning = []struct{ Code, Meaning string }{
	{"VALIDATION_ERROR", "The arguments are wrong: they fail the schema, or a value the daemon rejects. Fix them and call again."},
	{"NOT_FOUND", "No task, question, role, person or profile by that id or name."},
	{"FORBIDDEN", "Not allowed to this caller: outside your subtree, not the direct parent, a tool outside your surface, or an unknown or revoked session token."},
	{"CONFLICT", "The state does not allow it now: an archived, cancelled or done task, a full queue, a question no longer pending. `details` says more."},
	{"INTERNAL_ERROR", "A kandev bug or a failed write. Report it."},
	{"UNAVAILABLE", "The daemon cannot be reached or is shutting down, or the call was cut off before it answered."},
}

type docParam struct {
	Path, Type, Default, Description string
	Required                         bool
}

type docTool struct {
	Name, Title, Description, Where, Annotations, Schema string
	Waits                                                bool
	Params                                               []docParam
	Errors                                               []toolError
}

type docList struct {
	Name, Who, When, Label, Tool, Where string
	Tools                               []string
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func flatten(prefix string, ps []capability.Param, out *[]docParam) {
	for _, p := range ps {
		path := prefix + p.Name
		typ := p.Type
		if p.Type == "array" && p.Items != nil {
			typ = "array of " + p.Items.Type
		}
		if len(p.Enum) > 0 {
			typ += ": " + strings.Join(p.Enum, ", ")
		}
		def := ""
		if p.Default != nil {
			b, _ := json.Marshal(p.Default)
			def = "`" + string(b) + "`"
		}
		desc := p.Description
		var bounds []string
		if p.Min != nil {
			bounds = append(bounds, fmt.Sprintf("min %d", *p.Min))
		}
		if p.Max != nil {
			bounds = append(bounds, fmt.Sprintf("max %d", *p.Max))
		}
		if len(bounds) > 0 {
			unit := ""
			if p.Type == "array" {
				unit = " items"
			}
			desc += " (" + strings.Join(bounds, ", ") + unit + ")"
		}
		*out = append(*out, docParam{Path: path, Type: cell(typ), Default: def, Description: cell(desc), Required: p.Required})
		if p.Type == "object" {
			flatten(path+".", p.Props, out)
		}
		if p.Items != nil && p.Items.Type == "object" {
			flatten(path+"[].", p.Items.Props, out)
		}
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func renderDocs(t *testing.T) []byte {
	t.Helper()
	type data struct {
		EnvSocket, EnvToken, EnvDebug, EnvProgress string
		ProgressDefault, ProgressMax               string
		MaxWaiting                                 int
		MaxMessage                                 string
		Surfaces, Groups, QuestionCases, Cases     []docList
		Codes                                      []struct{ Code, Meaning string }
		Tools                                      []docTool
		QueueCap                                   int
	}
	d := data{EnvSocket: mcpserve.EnvSocket, EnvToken: mcpserve.EnvToken, EnvDebug: mcpserve.EnvDebug,
		EnvProgress: mcpserve.EnvProgressInterval, ProgressDefault: mcpserve.DefaultProgressInterval.String(),
		ProgressMax: mcpserve.MaxProgressInterval.String(), Codes: codeMeaning, QueueCap: api.QueueCap,
		MaxWaiting: mcpserve.MaxWaitingCalls, MaxMessage: fmt.Sprintf("%d MiB", mcpserve.MaxMessage>>20)}
	all := capability.All()
	for _, s := range capability.Surfaces {
		l := docList{Name: string(s), Who: surfaceWho[s]}
		for _, tool := range all {
			if slices.Contains(tool.Surfaces, s) {
				l.Tools = append(l.Tools, tool.Name)
			}
		}
		slices.Sort(l.Tools)
		d.Surfaces = append(d.Surfaces, l)
	}
	for _, g := range []capability.Group{capability.GroupTitle, capability.GroupQuestion, capability.GroupProvider} {
		l := docList{Name: string(g), When: groupWhen[g]}
		for _, tool := range all {
			if tool.Group == g {
				l.Tools = append(l.Tools, tool.Name)
			}
		}
		d.Groups = append(d.Groups, l)
	}
	for _, q := range []struct {
		label                string
		autopilot, hasParent bool
		where                string
	}{
		{"normal (not autopilot), root or child", false, false, "the operator; the call waits for the answer"},
		{"autopilot child", true, true, "its direct parent task; the call returns at once"},
		{"autopilot root", true, false, "nobody: it decides with its best judgment and states its assumptions"},
	} {
		d.QuestionCases = append(d.QuestionCases, docList{Label: q.label, Tool: capability.QuestionTool(q.autopilot, q.hasParent), Where: q.where})
	}
	for _, c := range []struct {
		label string
		c     capability.Case
	}{
		{"normal task", capability.Case{}},
		{"normal child", capability.Case{HasParent: true}},
		{"autopilot child", capability.Case{Autopilot: true, HasParent: true}},
		{"autopilot root", capability.Case{Autopilot: true}},
		{"normal task, untitled", capability.Case{TitlePending: true}},
		{"autopilot child, untitled", capability.Case{Autopilot: true, HasParent: true, TitlePending: true}},
		{"autopilot root, untitled", capability.Case{Autopilot: true, TitlePending: true}},
		{"normal task, GitHub origin", capability.Case{Host: capability.HostGitHub}},
		{"normal task, GitLab origin (glab on PATH)", capability.Case{Host: capability.HostGitLab}},
	} {
		c.c.Surface = capability.KanbanTask
		d.Cases = append(d.Cases, docList{Label: c.label, Tools: capability.Resolve(c.c).Names()})
	}
	for _, tool := range all {
		errs, ok := toolErrors[tool.Name]
		if !ok {
			t.Errorf("docs: no error entry for %s in toolErrors (mcpserve/docs_test.go)", tool.Name)
		}
		dt := docTool{Name: tool.Name, Title: tool.Title, Description: tool.Description, Waits: tool.Waits, Errors: errs,
			Annotations: fmt.Sprintf("read-only %s, destructive %s, idempotent %s, open-world %s",
				yesNo(tool.ReadOnly), yesNo(tool.Destructive), yesNo(tool.Idempotent), yesNo(tool.OpenWorld))}
		if tool.Group != "" {
			dt.Where = fmt.Sprintf("group `%s`", tool.Group)
		} else {
			var ss []string
			for _, s := range tool.Surfaces {
				ss = append(ss, "`"+string(s)+"`")
			}
			dt.Where = "surfaces " + strings.Join(ss, ", ")
		}
		b, err := json.MarshalIndent(tool.InputSchema(), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		dt.Schema = string(b)
		flatten("", tool.Params, &dt.Params)
		d.Tools = append(d.Tools, dt)
	}
	for name := range toolErrors {
		if _, ok := capability.Lookup(name); !ok {
			t.Errorf("docs: toolErrors names %s, which is not registered", name)
		}
	}
	tmpl := template.Must(template.ParseFiles(filepath.Join("testdata", "mcp.md.tmpl")))
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, d); err != nil {
		t.Fatal(err)
	}
	// No trailing spaces, one final newline.
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

func TestDocs(t *testing.T) {
	got := renderDocs(t)
	if *update {
		if err := os.WriteFile(docsPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatalf("%v (generate it: go test ./mcpserve -run TestDocs -update)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("docs/mcp.md is out of date with the registry (first difference at line %d):\n registry: %q\n file:     %q\nRegenerate: go test ./mcpserve -run TestDocs -update", i+1, g, w)
			}
		}
	}
}

// Every tool the docs describe is what the bridge declares.
func TestDocsDescribeTheBridgeDefinitions(t *testing.T) {
	for _, tool := range capability.All() {
		mt, err := mcpserve.Definition(tool)
		if err != nil {
			t.Fatal(err)
		}
		var schema map[string]any
		if err := json.Unmarshal(mt.RawInputSchema, &schema); err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		if schema["additionalProperties"] != false {
			t.Errorf("%s: declared schema accepts unknown arguments", tool.Name)
		}
		if *mt.Annotations.OpenWorldHint != tool.OpenWorld || *mt.Annotations.ReadOnlyHint != tool.ReadOnly ||
			*mt.Annotations.DestructiveHint != tool.Destructive || *mt.Annotations.IdempotentHint != tool.Idempotent {
			t.Errorf("%s: annotations %+v", tool.Name, mt.Annotations)
		}
	}
}
