package engine

// A task's tracker source (issue 41, ADR 0068): the issue it was created
// from, checked and recorded with the task (createSource, claimSourceTx),
// fixed after; one task per issue, archived tasks included; read into the
// task's view (sourceOf); its text in the agent's first prompt, marked as
// the tracker's (issueNotice); its closing line in the body of the pull
// request task pr opens (closingLine).

import (
	"context"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/prompt"
	"github.com/kandev/kandev/core/textsafe"
	"github.com/kandev/kandev/core/tracker"
	"github.com/kandev/kandev/store"
)

// maxSourceURL bounds a source's URL.
const maxSourceURL = 1024

// createSource checks a create's source: a known tracker, a reference in
// its canonical form, an http(s) URL, the text within tracker.MaxText. The
// text is cleaned again here: any client may send it.
func createSource(in api.CreateTaskInput) (*store.TaskSource, error) {
	s := in.Source
	if s == nil {
		if in.SourceText != "" {
			return nil, core.Errorf(core.CodeValidation, "source_text without a source")
		}
		return nil, nil
	}
	r, err := tracker.Parse(s.Ref)
	if err != nil {
		return nil, core.Errorf(core.CodeValidation, "source: %v", err)
	}
	if r.String() != s.Ref || r.Kind != s.Kind {
		return nil, core.Errorf(core.CodeValidation, "source %q of kind %q: give the reference in its canonical form, %s (kind %s)", s.Ref, s.Kind, r.String(), r.Kind)
	}
	u := strings.TrimSpace(s.URL)
	if u == "" {
		u = r.URL()
	}
	// Linear's URL names a workspace only Linear knows: it may be left out.
	if u != "" && (len(u) > maxSourceURL || (!strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://")) || textsafe.Line(u) != u) {
		return nil, core.Errorf(core.CodeValidation, "source URL %q: an http(s) URL of at most %d bytes", textsafe.Line(u), maxSourceURL)
	}
	text := textsafe.Clean(in.SourceText)
	if len(text) > tracker.MaxText+1024 {
		return nil, core.Errorf(core.CodeValidation, "source text is %d bytes; keep it to %d", len(text), tracker.MaxText)
	}
	return &store.TaskSource{Kind: r.Kind, Ref: r.String(), URL: u, Text: text}, nil
}

// sourceTaken refuses an issue some task already has, naming the task.
func (k *kernel) sourceTaken(ctx context.Context, q interface {
	TaskWithSource(context.Context, string) (string, error)
}, ref string) error {
	id, err := q.TaskWithSource(ctx, ref)
	if err != nil || id == "" {
		return err
	}
	what := "task " + id
	if t, ok := k.cached(id); ok {
		what += " (" + textsafe.Line(t.Title) + ")"
		if t.Archived {
			what += ", archived"
		}
	}
	return core.Errorf(core.CodeConflict, "issue %s was already imported: %s has it (kandev task show %s)", ref, what, id).
		WithDetails(map[string]string{"task_id": id, "source": ref})
}

// planSource checks a create's source and that no task has its issue
// yet: refused before a worktree is made, and checked again in the
// commit (claimSourceTx). nil for a create without one.
func (k *kernel) planSource(ctx context.Context, in api.CreateTaskInput) (*store.TaskSource, error) {
	source, err := createSource(in)
	if err != nil || source == nil {
		return nil, err
	}
	if err := k.sourceTaken(ctx, k.db, source.Ref); err != nil {
		return nil, err
	}
	return source, nil
}

// claimSourceTx records the source of a task being created, in its
// transaction: the check again, under the write lock, then the row.
func (k *kernel) claimSourceTx(ctx context.Context, tx *store.Tx, s *store.TaskSource, taskID string, now time.Time) error {
	if s == nil {
		return nil
	}
	if err := k.sourceTaken(ctx, tx, s.Ref); err != nil {
		return err
	}
	row := *s
	row.TaskID, row.CreatedAt = taskID, now
	return tx.InsertTaskSource(ctx, row)
}

// sourceOf is the source of a task's view: fixed at creation, so the
// cached view's once the task is cached, else the store's when the view
// says it has one (recorded).
func (k *kernel) sourceOf(ctx context.Context, id string, recorded bool) (*core.TaskSource, error) {
	if t, ok := k.cached(id); ok {
		return t.Source, nil
	}
	if !recorded {
		return nil, nil
	}
	s, ok, err := k.db.TaskSourceOf(ctx, id)
	if err != nil || !ok {
		return nil, err
	}
	return &core.TaskSource{Kind: s.Kind, Ref: s.Ref, URL: s.URL}, nil
}

// trackerName is how notices name a tracker kind.
func trackerName(kind string) string {
	switch kind {
	case tracker.GitHub:
		return "GitHub"
	case tracker.GitLab:
		return "GitLab"
	case tracker.Linear:
		return "Linear"
	}
	return kind
}

// issueNotice is the issue notice of a task with a source, and the
// source's text ("" and "" without one).
func (k *kernel) issueNotice(ctx context.Context, t core.Task) (notice, text string, err error) {
	if t.Source == nil {
		return "", "", nil
	}
	s, ok, err := k.db.TaskSourceOf(ctx, t.ID)
	if err != nil || !ok {
		return "", "", err
	}
	text = s.Text
	if strings.TrimSpace(text) == "" {
		text = "(the issue had no text)"
	}
	notice, err = prompt.RenderNotice(prompt.NoticeIssue, prompt.Issue{Tracker: trackerName(s.Kind), Ref: s.Ref, URL: s.URL, Text: text})
	return notice, s.Text, err
}

// closingLine is what a pull request's body says to close the task's
// issue when it merges, "" for a task without one. originURL is the
// repository's origin, for GitHub's and GitLab's short form.
func closingLine(t core.Task, originURL string) string {
	if t.Source == nil {
		return ""
	}
	r, err := tracker.Parse(t.Source.Ref)
	if err != nil {
		return ""
	}
	repo := ""
	if r.Kind != tracker.Linear {
		if p, err := tracker.ProjectOf(originURL); err == nil && p.Kind == r.Kind && p.Host == r.Host {
			repo = p.Repo
		}
	}
	return r.ClosingLine(repo)
}
