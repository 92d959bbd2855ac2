package capability

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The tool list of every case, written out by hand: a change to the
// registry that changes what an agent sees must change this table too.
func TestResolveToolLists(t *testing.T) {
	cases := []struct {
		name     string
		c        Case
		tools    []string
		groups   []Group
		question string
	}{
		{
			name: "normal task",
			c:    Case{Surface: KanbanTask},
			tools: []string{
				"ask_user_question_kandev",
				"create_task_kandev",
				"get_task_conversation_kandev",
				"get_task_diff_kandev",
				"get_task_kandev",
				"handoff_task_kandev",
				"list_profiles_kandev",
				"list_tasks_kandev",
				"message_task_kandev",
				"set_task_status_kandev",
				"stop_task_kandev",
			},
			groups:   []Group{GroupQuestion},
			question: AskUser,
		},
		{
			name: "normal child task",
			c:    Case{Surface: KanbanTask, HasParent: true},
			tools: []string{
				"ask_user_question_kandev",
				"create_task_kandev",
				"get_task_conversation_kandev",
				"get_task_diff_kandev",
				"get_task_kandev",
				"handoff_task_kandev",
				"list_profiles_kandev",
				"list_tasks_kandev",
				"message_task_kandev",
				"set_task_status_kandev",
				"stop_task_kandev",
			},
			groups:   []Group{GroupQuestion},
			question: AskUser,
		},
		{
			name: "autopilot child",
			c:    Case{Surface: KanbanTask, Autopilot: true, HasParent: true},
			tools: []string{
				"ask_parent_question_kandev",
				"create_task_kandev",
				"get_task_conversation_kandev",
				"get_task_diff_kandev",
				"get_task_kandev",
				"handoff_task_kandev",
				"list_profiles_kandev",
				"list_tasks_kandev",
				"message_task_kandev",
				"set_task_status_kandev",
				"stop_task_kandev",
			},
			groups:   []Group{GroupQuestion},
			question: AskParent,
		},
		{
			name: "autopilot root",
			c:    Case{Surface: KanbanTask, Autopilot: true},
			tools: []string{
				"create_task_kandev",
				"get_task_conversation_kandev",
				"get_task_diff_kandev",
				"get_task_kandev",
				"handoff_task_kandev",
				"list_profiles_kandev",
				"list_tasks_kandev",
				"message_task_kandev",
				"set_task_status_kandev",
				"stop_task_kandev",
			},
			groups: nil,
		},
		{
			name: "normal task, title group on",
			c:    Case{Surface: KanbanTask, TitlePending: true},
			tools: []string{
				"ask_user_question_kandev",
				"create_task_kandev",
				"get_task_conversation_kandev",
				"get_task_diff_kandev",
				"get_task_kandev",
				"handoff_task_kandev",
				"list_profiles_kandev",
				"list_tasks_kandev",
				"message_task_kandev",
				"set_task_status_kandev",
				"set_task_title_kandev",
				"stop_task_kandev",
			},
			groups:   []Group{GroupTitle, GroupQuestion},
			question: AskUser,
		},
		{
			name: "autopilot root, title group on",
			c:    Case{Surface: KanbanTask, Autopilot: true, TitlePending: true},
			tools: []string{
				"create_task_kandev",
				"get_task_conversation_kandev",
				"get_task_diff_kandev",
				"get_task_kandev",
				"handoff_task_kandev",
				"list_profiles_kandev",
				"list_tasks_kandev",
				"message_task_kandev",
				"set_task_status_kandev",
				"set_task_title_kandev",
				"stop_task_kandev",
			},
			groups: []Group{GroupTitle},
		},
		{
			name: "kanban-task surface, GitHub origin: the pull request tools",
			c:    Case{Surface: KanbanTask, Host: HostGitHub},
			tools: []string{
				"ask_user_question_kandev",
				"create_task_kandev",
				"get_pull_request_comments_kandev",
				"get_task_conversation_kandev",
				"get_task_diff_kandev",
				"get_task_kandev",
				"handoff_task_kandev",
				"list_profiles_kandev",
				"list_tasks_kandev",
				"message_task_kandev",
				"open_pull_request_kandev",
				"set_task_status_kandev",
				"stop_task_kandev",
			},
			groups:   []Group{GroupQuestion, GroupProvider},
			question: AskUser,
		},
		{
			name: "kanban-task surface, GitLab origin: the merge request tools",
			c:    Case{Surface: KanbanTask, Host: HostGitLab},
			tools: []string{
				"ask_user_question_kandev",
				"create_task_kandev",
				"get_merge_request_comments_kandev",
				"get_task_conversation_kandev",
				"get_task_diff_kandev",
				"get_task_kandev",
				"handoff_task_kandev",
				"list_profiles_kandev",
				"list_tasks_kandev",
				"message_task_kandev",
				"open_merge_request_kandev",
				"set_task_status_kandev",
				"stop_task_kandev",
			},
			groups:   []Group{GroupQuestion, GroupProvider},
			question: AskUser,
		},
		{
			name: "office-task surface",
			c:    Case{Surface: OfficeTask},
			tools: []string{
				"ask_user_question_kandev",
				"create_task_kandev",
				"get_task_conversation_kandev",
				"get_task_diff_kandev",
				"get_task_kandev",
				"handoff_task_kandev",
				"list_profiles_kandev",
				"list_roles_kandev",
				"list_tasks_kandev",
				"message_task_kandev",
				"set_task_status_kandev",
				"stop_task_kandev",
			},
			groups:   []Group{GroupQuestion},
			question: AskUser,
		},
		{
			name: "office-task surface, autopilot child, title group on",
			c:    Case{Surface: OfficeTask, Autopilot: true, HasParent: true, TitlePending: true},
			tools: []string{
				"ask_parent_question_kandev",
				"create_task_kandev",
				"get_task_conversation_kandev",
				"get_task_diff_kandev",
				"get_task_kandev",
				"handoff_task_kandev",
				"list_profiles_kandev",
				"list_roles_kandev",
				"list_tasks_kandev",
				"message_task_kandev",
				"set_task_status_kandev",
				"set_task_title_kandev",
				"stop_task_kandev",
			},
			groups:   []Group{GroupTitle, GroupQuestion},
			question: AskParent,
		},
		{
			name: "configuration surface",
			c:    Case{Surface: Configuration},
			tools: []string{
				"ask_user_question_kandev",
				"get_task_kandev",
				"list_profiles_kandev",
				"list_roles_kandev",
				"list_tasks_kandev",
				"remove_profile_kandev",
				"save_profile_kandev",
			},
			groups:   []Group{GroupQuestion},
			question: AskUser,
		},
		{
			name: "configuration surface, autopilot root",
			c:    Case{Surface: Configuration, Autopilot: true},
			tools: []string{
				"get_task_kandev",
				"list_profiles_kandev",
				"list_roles_kandev",
				"list_tasks_kandev",
				"remove_profile_kandev",
				"save_profile_kandev",
			},
		},
		{
			name: "external surface",
			c:    Case{Surface: External},
			tools: []string{
				"create_task_kandev",
				"get_task_conversation_kandev",
				"get_task_kandev",
				"list_tasks_kandev",
			},
		},
		{
			name: "external surface ignores task fields",
			c:    Case{Surface: External, Autopilot: true, HasParent: true, TitlePending: true, Host: HostGitHub},
			tools: []string{
				"create_task_kandev",
				"get_task_conversation_kandev",
				"get_task_kandev",
				"list_tasks_kandev",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := Resolve(tc.c)
			if got := set.Names(); !slices.Equal(got, tc.tools) {
				t.Errorf("tools:\n got  %v\n want %v", got, tc.tools)
			}
			if !slices.Equal(set.Groups, tc.groups) {
				t.Errorf("groups: got %v, want %v", set.Groups, tc.groups)
			}
			if set.Question != tc.question {
				t.Errorf("question tool: got %q, want %q", set.Question, tc.question)
			}
			if set.Surface != tc.c.Surface {
				t.Errorf("surface: got %q", set.Surface)
			}
			for _, name := range tc.tools {
				if !set.Has(name) {
					t.Errorf("Has(%s) = false", name)
				}
			}
		})
	}
}

// allCases enumerates every combination of a case's fields.
func allCases() []Case {
	var out []Case
	for _, s := range Surfaces {
		for i := 0; i < 16; i++ {
			out = append(out, Case{Surface: s, Autopilot: i&1 != 0, HasParent: i&2 != 0, TitlePending: i&4 != 0, Host: [...]string{"", HostGitHub}[i>>3&1]})
		}
	}
	return out
}

// Rule 1 over every case: never both question tools; ask_parent only for
// an autopilot task with a parent; ask_user only for a normal task.
func TestQuestionRuleEveryCase(t *testing.T) {
	for _, c := range allCases() {
		set := Resolve(c)
		user, parent := set.Has(AskUser), set.Has(AskParent)
		if user && parent {
			t.Errorf("%+v: both question tools", c)
		}
		wantParent := c.Surface.TaskSurface() && c.Autopilot && c.HasParent
		wantUser := c.Surface.TaskSurface() && !c.Autopilot
		if parent != wantParent {
			t.Errorf("%+v: ask_parent_question_kandev granted = %v, want %v", c, parent, wantParent)
		}
		if user != wantUser {
			t.Errorf("%+v: ask_user_question_kandev granted = %v, want %v", c, user, wantUser)
		}
		if title := set.Has("set_task_title_kandev"); title != (c.Surface.TaskSurface() && c.TitlePending) {
			t.Errorf("%+v: set_task_title_kandev granted = %v", c, title)
		}
		q := ""
		switch {
		case user:
			q = AskUser
		case parent:
			q = AskParent
		}
		if set.Question != q {
			t.Errorf("%+v: Question = %q, but the set grants %q", c, set.Question, q)
		}
		if QuestionTool(c.Autopilot, c.HasParent) == "" && slices.Contains(set.Groups, GroupQuestion) {
			t.Errorf("%+v: question group on without a question tool", c)
		}
		// The same case always resolves the same set (a restart derives it
		// again from the persisted fields).
		if again := Resolve(c); !slices.Equal(again.Names(), set.Names()) {
			t.Errorf("%+v: Resolve is not deterministic", c)
		}
	}
}

func TestParseSurface(t *testing.T) {
	for _, s := range Surfaces {
		got, err := ParseSurface(string(s))
		if err != nil || got != s {
			t.Errorf("ParseSurface(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParseSurface("kanban"); err == nil {
		t.Error("ParseSurface accepted an unknown surface")
	}
}

// The table itself: one row per tool, each with a home.
func TestRegistryTable(t *testing.T) {
	seen := map[string]bool{}
	for _, tool := range All() {
		if seen[tool.Name] {
			t.Errorf("%s registered twice", tool.Name)
		}
		seen[tool.Name] = true
		if !strings.HasSuffix(tool.Name, "_kandev") {
			t.Errorf("%s: tool names end in _kandev", tool.Name)
		}
		if tool.Title == "" || tool.Description == "" {
			t.Errorf("%s: title and description are required", tool.Name)
		}
		if (len(tool.Surfaces) == 0) == (tool.Group == "") {
			t.Errorf("%s: exactly one of Surfaces or Group must be set", tool.Name)
		}
		if tool.ReadOnly && tool.Destructive {
			t.Errorf("%s: read-only and destructive", tool.Name)
		}
		if tool.Waits && tool.ReadOnly {
			t.Errorf("%s: a waiting tool records a question; it is not read-only", tool.Name)
		}
		if got, ok := Lookup(tool.Name); !ok || got.Name != tool.Name {
			t.Errorf("Lookup(%s) failed", tool.Name)
		}
	}
	if _, ok := Lookup("nope_kandev"); ok {
		t.Error("Lookup found an unknown tool")
	}
}

// Every schema refuses unknown arguments at every level.
func TestSchemasAreClosed(t *testing.T) {
	var check func(tool, where string, s map[string]any)
	check = func(tool, where string, s map[string]any) {
		if s["type"] == "object" && s["additionalProperties"] != false {
			t.Errorf("%s%s: object schema without additionalProperties false", tool, where)
		}
		if props, ok := s["properties"].(map[string]any); ok {
			for name, p := range props {
				check(tool, where+"."+name, p.(map[string]any))
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			check(tool, where+"[]", items)
		}
	}
	for _, tool := range All() {
		check(tool.Name, "", tool.InputSchema())
	}
}

// Schema and argument struct agree: every parameter is a JSON field of the
// tool's args struct, with a matching type, and every field is a parameter.
func TestSchemaMatchesArgs(t *testing.T) {
	for _, tool := range All() {
		args := tool.NewArgs()
		rt := reflect.TypeOf(args)
		if rt.Kind() != reflect.Pointer || rt.Elem().Kind() != reflect.Struct {
			t.Errorf("%s: NewArgs returns %T, want a pointer to a struct", tool.Name, args)
			continue
		}
		compareParams(t, tool.Name, tool.Params, rt.Elem())
	}
}

func compareParams(t *testing.T, where string, params []Param, st reflect.Type) {
	t.Helper()
	fields := map[string]reflect.Type{}
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			t.Errorf("%s: field %s.%s has no JSON name", where, st.Name(), f.Name)
			continue
		}
		fields[name] = f.Type
	}
	names := map[string]bool{}
	for _, p := range params {
		names[p.Name] = true
		ft, ok := fields[p.Name]
		if !ok {
			t.Errorf("%s: parameter %s is not a JSON field of %s", where, p.Name, st.Name())
			continue
		}
		compareType(t, where+"."+p.Name, p, ft)
	}
	for name := range fields {
		if !names[name] {
			t.Errorf("%s: field %s of %s is not a schema parameter", where, name, st.Name())
		}
	}
}

func compareType(t *testing.T, where string, p Param, ft reflect.Type) {
	t.Helper()
	if ft.Kind() == reflect.Pointer {
		if p.Required {
			t.Errorf("%s: a required parameter needs no pointer (%s)", where, ft)
		}
		ft = ft.Elem()
	}
	ok := false
	switch p.Type {
	case "string":
		ok = ft.Kind() == reflect.String
	case "boolean":
		ok = ft.Kind() == reflect.Bool
	case "integer":
		switch ft.Kind() {
		case reflect.Int, reflect.Int32, reflect.Int64:
			ok = true
		}
	case "array":
		ok = ft.Kind() == reflect.Slice
		if ok && p.Items != nil {
			compareType(t, where+"[]", *p.Items, ft.Elem())
		}
	case "object":
		ok = ft.Kind() == reflect.Struct
		if ok {
			compareParams(t, where, p.Props, ft)
		}
	default:
		t.Errorf("%s: unknown parameter type %q", where, p.Type)
		return
	}
	if !ok {
		t.Errorf("%s: schema type %s, but the args field is %s", where, p.Type, ft)
	}
	if p.Default != nil {
		switch p.Default.(type) {
		case bool:
			ok = p.Type == "boolean"
		case string:
			ok = p.Type == "string"
		case int:
			ok = p.Type == "integer"
		default:
			ok = false
		}
		if !ok {
			t.Errorf("%s: default %v (%T) does not fit type %s", where, p.Default, p.Default, p.Type)
		}
	}
}

// No tool of any surface or group fixes or raises a budget (rule 6: a
// person's only): no tool is about budgets and no argument names one, so
// an agent has no way to its own tree's limit.
func TestNoToolTouchesBudgets(t *testing.T) {
	var check func(tool string, p Param)
	check = func(tool string, p Param) {
		if strings.Contains(strings.ToLower(p.Name), "budget") {
			t.Errorf("%s takes a %q argument", tool, p.Name)
		}
		if p.Items != nil {
			check(tool, *p.Items)
		}
		for _, q := range p.Props {
			check(tool, q)
		}
	}
	for _, tool := range All() {
		if strings.Contains(strings.ToLower(tool.Name+" "+tool.Title), "budget") {
			t.Errorf("tool %s is about budgets", tool.Name)
		}
		for _, p := range tool.Params {
			check(tool.Name, p)
		}
	}
}
