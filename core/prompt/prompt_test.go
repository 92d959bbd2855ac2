package prompt

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/kandev/kandev/core/capability"
)

var toolName = regexp.MustCompile(`\b[a-z][a-z_]*_kandev\b`)

// taskCases is every capability case of the surfaces whose sessions work
// a task. The external surface has no task, so no session preamble.
func taskCases() []capability.Case {
	var out []capability.Case
	for _, s := range capability.Surfaces {
		if !s.TaskSurface() {
			continue
		}
		for i := 0; i < 24; i++ {
			host := [...]string{"", capability.HostGitHub, capability.HostGitLab}[i/8]
			out = append(out, capability.Case{Surface: s, Autopilot: i&1 != 0, HasParent: i&2 != 0,
				TitlePending: i&4 != 0, Host: host})
		}
	}
	return out
}

func render(t *testing.T, c capability.Case) (string, capability.Set) {
	t.Helper()
	set := capability.Resolve(c)
	info := TaskInfo{ID: "t1abcd", Title: "Split the auth module", Description: "Keep the public API.",
		CWD: "/work/repo", Autopilot: c.Autopilot}
	if c.HasParent {
		info.ParentID = "p9wxyz"
	}
	text, err := Preamble(info, set)
	if err != nil {
		t.Fatalf("%+v: %v", c, err)
	}
	return text, set
}

// The prompt and the registry agree in every case: every kandev tool the
// preamble names is registered, and every registered tool is explained.
func TestPreambleMatchesRegistry(t *testing.T) {
	for _, c := range taskCases() {
		t.Run(caseName(c), func(t *testing.T) {
			text, set := render(t, c)
			for _, name := range toolName.FindAllString(text, -1) {
				if !set.Has(name) {
					t.Errorf("the preamble names %s, which this session does not have\n%s", name, text)
				}
			}
			for _, tool := range set.Tools {
				switch tool.Group {
				case capability.GroupQuestion, capability.GroupTitle:
					// Explained in their own sections.
					if !strings.Contains(text, tool.Name) {
						t.Errorf("%s is registered but the preamble never explains it\n%s", tool.Name, text)
					}
				default:
					if !strings.Contains(text, "\n- "+tool.Name+": ") {
						t.Errorf("coordination tool %s is registered but has no line in the coordination section\n%s", tool.Name, text)
					}
				}
			}
		})
	}
}

// The question section follows the autopilot rule.
func TestPreambleQuestionSection(t *testing.T) {
	for _, c := range taskCases() {
		text, set := render(t, c)
		switch set.Question {
		case capability.AskUser:
			if !strings.Contains(text, "## Questions") || strings.Contains(text, "## Autopilot") {
				t.Errorf("%s: a normal task gets the operator question section\n%s", caseName(c), text)
			}
		case capability.AskParent:
			if !strings.Contains(text, "## Autopilot") || !strings.Contains(text, "last action of your turn") {
				t.Errorf("%s: an autopilot child is told to ask its parent as its last action\n%s", caseName(c), text)
			}
		case "":
			if !strings.Contains(text, "no parent to ask") || strings.Contains(text, "question_kandev") {
				t.Errorf("%s: an autopilot root is told it has no one to ask\n%s", caseName(c), text)
			}
		}
		if section, granted := strings.Contains(text, "## Title"), set.Has("set_task_title_kandev"); section != granted {
			t.Errorf("%s: title section present = %v, title tool granted = %v", caseName(c), section, granted)
		}
	}
}

// A tool the prompt cannot explain is refused rather than left unexplained.
func TestPreambleRefusesUnexplainedTool(t *testing.T) {
	set := capability.Resolve(capability.Case{Surface: capability.KanbanTask})
	set.Tools = append(set.Tools, capability.Tool{Name: "mystery_kandev", Surfaces: []capability.Surface{capability.KanbanTask}})
	if _, err := Preamble(TaskInfo{ID: "t1"}, set); err == nil {
		t.Fatal("Preamble rendered a tool it has no summary for")
	}
}

func TestPreambleIdentity(t *testing.T) {
	text, _ := render(t, capability.Case{Surface: capability.KanbanTask, HasParent: true})
	for _, want := range []string{"task_id: t1abcd", "parent_task_id: p9wxyz", "Working directory: /work/repo", "Split the auth module", "Keep the public API."} {
		if !strings.Contains(text, want) {
			t.Errorf("preamble lacks %q\n%s", want, text)
		}
	}
	if !strings.HasPrefix(text, "[kandev:task]") {
		t.Errorf("preamble does not start with its tag:\n%s", text)
	}
}

func caseName(c capability.Case) string {
	return fmt.Sprintf("%s/autopilot=%v/parent=%v/title=%v/host=%q", c.Surface, c.Autopilot, c.HasParent, c.TitlePending, c.Host)
}

// The preamble says which workspace the agent works in (issue 11).
func TestPreambleWorkspace(t *testing.T) {
	set := capability.Resolve(capability.Case{Surface: capability.KanbanTask})
	for _, c := range []struct {
		ws, want, not string
	}{
		{"worktree", "Workspace: your own git worktree on branch kandev/t1-x;", "parent task's"},
		{"inherit", "Workspace: your parent task's git worktree, on its branch kandev/t1-x:", "your own git worktree"},
		{"", "Working directory: /w\n", "Workspace:"},
	} {
		text, err := Preamble(TaskInfo{ID: "t1", Title: "x", CWD: "/w", Workspace: c.ws, Branch: "kandev/t1-x"}, set)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, c.want) || strings.Contains(text, c.not) {
			t.Errorf("workspace %q: want %q, not %q, in\n%s", c.ws, c.want, c.not, text)
		}
	}
}
