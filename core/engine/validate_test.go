package engine_test

import (
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// A title is one line: NUL and line breaks are a VALIDATION_ERROR on
// create, edit and set_task_title_kandev (not the store's CHECK CONFLICT);
// a placeholder derived from a prompt is cleaned instead.
func TestTitleMustBeOneLine(t *testing.T) {
	c := newCoord(t)
	task := c.task("fine", "", false)
	untitled, err := c.eng.Tasks.CreateTask(c.ctx, api.CreateTaskInput{Prompt: "do it", Profile: "idle", CWD: t.TempDir()})
	if err != nil || !untitled.TitlePending {
		t.Fatalf("untitled: %+v %v", untitled, err)
	}
	for _, title := range []string{"\x00", "\x00\x00\x00", "a\x00b", "two\nlines", "cr\rhere", "sep\u2028x"} {
		_, err = c.eng.Tasks.CreateTask(c.ctx, api.CreateTaskInput{Title: title, Profile: "idle", CWD: t.TempDir()})
		wantCode(t, err, core.CodeValidation)
		_, err = c.eng.Tasks.EditTask(c.ctx, task.ID, api.EditTaskInput{Title: &title})
		wantCode(t, err, core.CodeValidation)
		_, err = c.call(untitled.ID, "set_task_title_kandev", map[string]any{"title": title})
		wantCode(t, err, core.CodeValidation)
	}
	got, err := c.eng.Tasks.CreateTask(c.ctx, api.CreateTaskInput{Prompt: "\x00\x1b[2Jdo \x00the thing\nmore", Profile: "idle", CWD: t.TempDir()})
	if err != nil || got.Title != "do the thing" || !got.TitlePending {
		t.Fatalf("placeholder title: %+v %v", got, err)
	}
	_, err = c.eng.Tasks.CreateTask(c.ctx, api.CreateTaskInput{Prompt: "\x00\n\x00", Profile: "idle", CWD: t.TempDir()})
	wantCode(t, err, core.CodeValidation)
	// Escape sequences are kept as given; the CLI and the TUI show them
	// harmlessly.
	if _, err := c.eng.Tasks.CreateTask(c.ctx, api.CreateTaskInput{Title: "x\x1b]52;c;aGk=\x07", Profile: "idle", CWD: t.TempDir()}); err != nil {
		t.Fatalf("title with an escape: %v", err)
	}
}
