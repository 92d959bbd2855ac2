package tui

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// These tests drive each dialog on its own, with no model and no client:
// a key in, an action out.

func testUI() dialogUI {
	return dialogUI{st: testStyles(), keys: newKeyMap(), width: 74, height: 24, body: 22}
}

// press sends keys to d and returns the last action any of them asked
// for (nil when none did).
func press(t *testing.T, d dialog, keys ...string) action {
	t.Helper()
	var last action
	for _, k := range keys {
		var msg tea.KeyMsg
		if len([]rune(k)) > 1 && keyMsg(k).Type == tea.KeyRunes {
			for _, r := range k {
				if a, _ := d.update(testUI(), tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}}); a != nil {
					last = a
				}
			}
			continue
		}
		msg = keyMsg(k)
		if a, _ := d.update(testUI(), msg); a != nil {
			last = a
		}
	}
	return last
}

func wantAction(t *testing.T, got, want action) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("action = %#v, want %#v", got, want)
	}
}

func TestConfirmDialogActions(t *testing.T) {
	d := &confirmDialog{base: base{id: 1}, op: opStop, taskID: "t1", title: "Stop task t1?"}
	wantAction(t, press(t, d, "y"), stopTask{taskID: "t1"})
	// Busy: a second y asks nothing until the outcome arrives.
	wantAction(t, press(t, d, "y"), nil)
	d.failed(errors.New("no"))
	// After a refusal enter no longer confirms (it could be a stray key); y does.
	wantAction(t, press(t, d, "enter"), nil)
	wantAction(t, press(t, d, "n"), closeDialog{})

	a := &confirmDialog{base: base{id: 2}, op: opArchive, taskID: "t2"}
	wantAction(t, press(t, a, "enter"), archiveTask{taskID: "t2"})
	wantAction(t, press(t, &confirmDialog{op: opArchive, taskID: "t2"}, "esc"), closeDialog{})
}

func TestHelpDialogActions(t *testing.T) {
	wantAction(t, press(t, &helpDialog{}, "x"), closeDialog{})
}

func TestNewTaskDialogActions(t *testing.T) {
	profiles := []core.Profile{{Name: "claude", MCP: true}, {Name: "mock", MCP: true}}
	sel := &core.Task{ID: "p1", Title: "Parent", Profile: "claude"}
	d := newNewTaskDialog(testUI(), 1, sel, profiles, "/repo")
	got := press(t, d, "Fix it", "tab", "go", "enter")
	// A child sends no directory, so it works in its parent's worktree
	// (or directory), as the CLI's child does.
	wantAction(t, got, createTask{in: api.CreateTaskInput{Title: "Fix it", Prompt: "go", Profile: "claude",
		ParentID: "p1", Start: true}})

	// Asked for, a child gets a worktree of its own (from its parent's branch).
	d = newNewTaskDialog(testUI(), 4, sel, profiles, "/repo")
	press(t, d, "Kid")
	d.setFocus(ntWorkspace)
	if !strings.Contains(d.view(testUI(), 70), "‹ inherit ›") {
		t.Fatalf("a child inherits by default:\n%s", d.view(testUI(), 70))
	}
	press(t, d, "space")
	if !strings.Contains(d.view(testUI(), 70), "‹ new ›") {
		t.Fatalf("space should choose a new worktree:\n%s", d.view(testUI(), 70))
	}
	wantAction(t, press(t, d, "enter"), createTask{in: api.CreateTaskInput{Title: "Kid", Profile: "claude",
		ParentID: "p1", Start: true, Workspace: "new"}})

	// A root task sends the UI's directory (a worktree in a git
	// repository), or runs in it as it is when asked. Its profile is the
	// default until one is chosen: none is sent and the daemon picks the
	// configured one, as `kandev task create` without --profile.
	d = newNewTaskDialog(testUI(), 5, nil, profiles, "/repo")
	press(t, d, "Top")
	if !strings.Contains(d.view(testUI(), 70), "‹ default ›") {
		t.Fatalf("a root task starts on the default profile:\n%s", d.view(testUI(), 70))
	}
	d.setFocus(ntWorkspace)
	press(t, d, "right")
	wantAction(t, press(t, d, "enter"), createTask{in: api.CreateTaskInput{Title: "Top",
		Start: true, CWD: "/repo", Workspace: core.WorkspaceShared}})

	// From the default, left wraps to the last profile and right back.
	d = newNewTaskDialog(testUI(), 6, nil, profiles, "/repo")
	press(t, d, "Left")
	d.setFocus(ntProfile)
	press(t, d, "left")
	wantAction(t, press(t, d, "enter"), createTask{in: api.CreateTaskInput{Title: "Left", Profile: "mock",
		Start: true, CWD: "/repo"}})
	d = newNewTaskDialog(testUI(), 7, nil, profiles, "/repo")
	press(t, d, "Right")
	d.setFocus(ntProfile)
	press(t, d, "left", "right")
	wantAction(t, press(t, d, "enter"), createTask{in: api.CreateTaskInput{Title: "Right",
		Start: true, CWD: "/repo"}})

	// A root task: the parent toggled off, autopilot on, not started, the next profile.
	d = newNewTaskDialog(testUI(), 2, sel, profiles, "/repo")
	press(t, d, "Root")
	d.setFocus(ntProfile)
	press(t, d, "right", "down", "space", "down", "space", "down", "space")
	wantAction(t, press(t, d, "enter"), createTask{in: api.CreateTaskInput{Title: "Root", Profile: "mock",
		Autopilot: true, CWD: "/repo"}})
	wantAction(t, press(t, newNewTaskDialog(testUI(), 3, nil, profiles, ""), "esc"), closeDialog{})
}

func TestAnswerDialogActions(t *testing.T) {
	task := &core.Task{ID: "t1", PendingQuestion: &core.QuestionInfo{ID: "q1", Questions: []core.QuestionItem{
		{Prompt: "Which DB?", Options: []core.QuestionOption{{Label: "sqlite"}, {Label: "postgres"}}},
		{Prompt: "Why?"},
	}}}
	d := newAnswerDialog(testUI(), 1, task)
	// Nothing is chosen on opening: enter sends nothing and stays put.
	wantAction(t, press(t, d, "enter"), nil)
	if d.cur != 0 || !strings.Contains(d.view(testUI(), 70), "nothing is chosen yet") {
		t.Fatalf("enter with no choice must say so and stay on part 1:\n%s", d.view(testUI(), 70))
	}
	// enter on the first part moves on; on the last it answers.
	wantAction(t, press(t, d, "2", "enter"), nil)
	// An empty free-text part sends nothing either.
	wantAction(t, press(t, d, "enter"), nil)
	wantAction(t, press(t, d, "because", "enter"), answerTask{taskID: "t1",
		in: api.AnswerInput{QuestionID: "q1", Answers: []string{"2", "because"}}})

	// The "other" row is the last one: up from no choice, or its digit.
	d = newAnswerDialog(testUI(), 2, task)
	wantAction(t, press(t, d, "up", "mine", "tab", "x", "enter"), answerTask{taskID: "t1",
		in: api.AnswerInput{QuestionID: "q1", Answers: []string{"mine", "x"}}})
	d = newAnswerDialog(testUI(), 3, task)
	wantAction(t, press(t, d, "3", "ours", "tab", "x", "enter"), answerTask{taskID: "t1",
		in: api.AnswerInput{QuestionID: "q1", Answers: []string{"ours", "x"}}})
	// A letter is not an option: it chooses nothing (and undoes a choice).
	d = newAnswerDialog(testUI(), 4, task)
	wantAction(t, press(t, d, "1", "j"), nil)
	if d.parts[0].choice != noChoice || !strings.Contains(d.view(testUI(), 70), `"j" is not an option`) {
		t.Fatalf("j must choose nothing and say which keys are:\n%s", d.view(testUI(), 70))
	}
	wantAction(t, press(t, d, "enter"), nil)
	// y and n are not keys here: neither option is a yes or a no.
	wantAction(t, press(t, d, "y", "enter"), nil)
	wantAction(t, press(t, newAnswerDialog(testUI(), 5, task), "esc"), closeDialog{})

	// A question whose options are a yes and a no takes y and n.
	yn := &core.Task{ID: "t2", PendingQuestion: &core.QuestionInfo{ID: "q2", Questions: []core.QuestionItem{
		{Prompt: "Go on?", Options: []core.QuestionOption{{Label: "Yes, go ahead"}, {Label: "No"}}}}}}
	wantAction(t, press(t, newAnswerDialog(testUI(), 6, yn), "n", "enter"), answerTask{taskID: "t2",
		in: api.AnswerInput{QuestionID: "q2", Answers: []string{"2"}}})
	wantAction(t, press(t, newAnswerDialog(testUI(), 7, yn), "y", "enter"), answerTask{taskID: "t2",
		in: api.AnswerInput{QuestionID: "q2", Answers: []string{"1"}}})
}

// permissionTask asks the operator's permission to run cmd, with the
// options an ACP agent offers.
func permissionTask(id, cmd string) *core.Task {
	return &core.Task{ID: id, Title: "Deploy", PendingQuestion: &core.QuestionInfo{ID: "qp", Kind: core.QuestionPermission,
		Status: core.QuestionPending, Text: "The agent asks permission to run: " + cmd,
		Tool: &core.PermissionTool{Title: cmd, Kind: "execute"},
		Questions: []core.QuestionItem{{Prompt: "The agent asks permission to run: " + cmd, Options: []core.QuestionOption{
			{Label: "Allow once", Description: "allow_once"}, {Label: "Allow always", Description: "allow_always"},
			{Label: "Reject", Description: "reject_once"}}}}}}
}

// TestPermissionDialogCannotBeMistaken is issue 22's safety bug: typing
// "no, dont" and enter in the permission dialog allowed ./deploy.sh.
// Now it sends nothing; n (the one reject) and enter refuse.
func TestPermissionDialogCannotBeMistaken(t *testing.T) {
	task := permissionTask("t1", "./deploy.sh --env staging")
	d := newAnswerDialog(testUI(), 1, task)
	v := d.view(testUI(), 70)
	if strings.Contains(v, "other") || strings.Contains(v, "> 1)") || !strings.Contains(v, "(nothing chosen)") {
		t.Fatalf("a permission dialog offers exactly the agent's options, none chosen:\n%s", v)
	}
	wantAction(t, press(t, d, "no, dont"), nil)
	v = strings.ReplaceAll(d.view(testUI(), 70), "\n", " ")
	if d.parts[0].choice != noChoice || !strings.Contains(v, `"t" is not an option, so nothing is chosen: 1-3, y (Allow once), n (Reject)`) {
		t.Fatalf("typed prose chooses nothing and says which keys are:\n%s", v)
	}
	wantAction(t, press(t, d, "enter"), nil)
	if v = d.view(testUI(), 70); !strings.Contains(v, "nothing was sent") {
		t.Fatalf("enter with nothing chosen says so:\n%s", v)
	}
	wantAction(t, press(t, d, "n", "enter"), answerTask{taskID: "t1",
		in: api.AnswerInput{QuestionID: "qp", Answers: []string{"3"}}})
	wantAction(t, press(t, newAnswerDialog(testUI(), 2, task), "y", "enter"), answerTask{taskID: "t1",
		in: api.AnswerInput{QuestionID: "qp", Answers: []string{"1"}}})
	wantAction(t, press(t, newAnswerDialog(testUI(), 3, task), "2", "enter"), answerTask{taskID: "t1",
		in: api.AnswerInput{QuestionID: "qp", Answers: []string{"2"}}})
	// No free-text row: 4 is not a key, and typing never reaches an input.
	d = newAnswerDialog(testUI(), 4, task)
	wantAction(t, press(t, d, "4", "enter"), nil)
	wantAction(t, press(t, d, "down", "down", "down", "down", "enter"), answerTask{taskID: "t1",
		in: api.AnswerInput{QuestionID: "qp", Answers: []string{"1"}}})

	// Two rejects: n is ambiguous unless one is reject_once.
	two := permissionTask("t2", "rm -rf /")
	opts := two.PendingQuestion.Questions[0].Options
	two.PendingQuestion.Questions[0].Options = append(opts[:2:2], core.QuestionOption{Label: "Reject always", Description: "reject_always"},
		core.QuestionOption{Label: "Reject always too", Description: "reject_always"})
	wantAction(t, press(t, newAnswerDialog(testUI(), 5, two), "n", "enter"), nil)
}

func TestMessageDialogActions(t *testing.T) {
	task := &core.Task{ID: "t1", Title: "Work"}
	d := newMessageDialog(testUI(), 1, task)
	wantAction(t, press(t, d, "hello", "ctrl+j", "there", "enter"), messageTask{taskID: "t1",
		in: api.MessageInput{Text: "hello\nthere", Delivery: api.DeliveryQueued}})

	d = newMessageDialog(testUI(), 2, task)
	wantAction(t, press(t, d, "now", "tab", "enter"), messageTask{taskID: "t1",
		in: api.MessageInput{Text: "now", Delivery: api.DeliveryInterrupt}})
	wantAction(t, press(t, newMessageDialog(testUI(), 3, task), "esc"), closeDialog{})
}

func TestStatusDialogActions(t *testing.T) {
	task := &core.Task{ID: "t1", Status: core.StatusReview}
	wantAction(t, press(t, newStatusDialog(1, task), "y"), setTaskStatus{taskID: "t1", from: core.StatusReview, to: core.StatusDone})
	wantAction(t, press(t, newStatusDialog(2, task), "1", "enter"), setTaskStatus{taskID: "t1", from: core.StatusReview, to: core.Statuses[0]})
	wantAction(t, press(t, newStatusDialog(3, task), "down", "y"), setTaskStatus{taskID: "t1", from: core.StatusReview, to: core.StatusCancelled})
	wantAction(t, press(t, newStatusDialog(4, task), "esc"), closeDialog{})
}

func TestHandoffDialogActions(t *testing.T) {
	task := &core.Task{ID: "t1", Title: "Work",
		Assignee: &core.Ref{Kind: "person", Name: core.Operator},
		HandedBy: &core.Ref{Kind: "role", Name: "mock"}}
	d := newHandoffDialog(testUI(), 1, task, []core.Profile{{Name: "mock", MCP: true}})
	d.loaded(assigneesMsg{dialog: 1, roles: []api.Role{{Name: "reviewer", Profile: "mock"}}, persons: []api.Person{{Name: "alice"}}})
	// back is chosen first when someone handed the task over.
	wantAction(t, press(t, d, "enter", "look", "enter"), handOnTask{taskID: "t1", in: api.HandoffInput{To: "back", Message: "look"}})

	d = newHandoffDialog(testUI(), 2, task, nil)
	d.loaded(assigneesMsg{dialog: 2, roles: []api.Role{{Name: "reviewer", Profile: "mock"}}, persons: []api.Person{{Name: "alice"}}})
	wantAction(t, press(t, d, "ali", "tab", "enter"), handOnTask{taskID: "t1", in: api.HandoffInput{To: "alice"}})

	// A name the list lacks goes as typed.
	d = newHandoffDialog(testUI(), 3, task, nil)
	d.loaded(assigneesMsg{dialog: 3})
	wantAction(t, press(t, d, "zed", "enter", "enter"), handOnTask{taskID: "t1", in: api.HandoffInput{To: "zed"}})
	wantAction(t, press(t, newHandoffDialog(testUI(), 4, task, nil), "esc"), closeDialog{})
}

func TestQueueDialogActions(t *testing.T) {
	d := &queueDialog{base: base{id: 1, busy: true}, taskID: "t1"}
	// Nothing to drop before the listing arrives.
	wantAction(t, press(t, d, "x"), nil)
	wantAction(t, d.loaded(queueMsg{dialog: 1, view: api.QueueView{Items: []api.QueuedItem{{ID: 7}, {ID: 8}}}}), nil)
	wantAction(t, press(t, d, "down", "x"), dropQueued{taskID: "t1", in: api.DropQueueInput{ID: 8}})
	wantAction(t, d.loaded(queueMsg{dialog: 1, drop: true, view: api.QueueView{Items: []api.QueuedItem{{ID: 7}}, Dropped: []int64{8}}}),
		showStatus{text: "task t1: dropped 1 item(s) from its queue"})
	wantAction(t, press(t, d, "X"), dropQueued{taskID: "t1", in: api.DropQueueInput{All: true}})
	wantAction(t, press(t, d, "esc"), closeDialog{})
}

func TestDiffViewActions(t *testing.T) {
	d := newDiffView(1, &core.Task{ID: "t1"})
	// While it reads, only closing does anything.
	wantAction(t, press(t, d, "j"), nil)
	d.loaded(diffMsg{dialog: 1, diff: loaderDiff()})
	// Scrolling and moving between files are the view's own: no action.
	wantAction(t, press(t, d, "j", "tab", "shift+tab", "G", "g", "pgdown"), nil)
	for _, k := range []string{"esc", "v", "q"} {
		wantAction(t, press(t, d, k), closeDialog{})
	}
}
