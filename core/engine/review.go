package engine

// Review comments on a task's diff (issue 29): checked against the diff as
// it is when they are made, kept on the task, delivered to its agent as one
// review notice, and open until the lines they point at change.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/prompt"
	"github.com/kandev/kandev/core/workspace"
	"github.com/kandev/kandev/store"
)

const (
	// reviewContext is how many hunk lines the agent is shown on each
	// side of the lines a comment points at.
	reviewContext = 3
	// maxReviewText bounds one comment's text, maxReviewLines the lines
	// one comment may span: a review is for a person to write.
	maxReviewText  = 8 << 10
	maxReviewLines = 200
	// maxReviewFile bounds what the state check reads of a file.
	maxReviewFile = 16 << 20
)

// reviewPlan is a review checked against the task's diff, before anything
// is written: the rows to keep and the notice the agent gets.
type reviewPlan struct {
	rows   []store.ReviewComment
	notice prompt.Review
}

// planReview checks every comment against the task's diff as it is now
// and cuts the hunk lines around each. Any comment that does not point at
// lines of the diff refuses the whole review: nothing is written.
func (wo *Workspaces) planReview(ctx context.Context, t core.Task, actor core.Actor, text string, in []api.ReviewCommentInput) (reviewPlan, error) {
	if len(in) > capability.MaxReviewComments {
		return reviewPlan{}, core.Errorf(core.CodeValidation, "a review carries at most %d comments, not %d", capability.MaxReviewComments, len(in))
	}
	d, err := wo.Diff(ctx, t.ID, api.DiffInput{Patch: true})
	if err != nil {
		var ce *core.Error
		if errors.As(err, &ce) {
			return reviewPlan{}, core.Errorf(ce.Code, "cannot review task %s: %s", t.ID, ce.Message)
		}
		return reviewPlan{}, err
	}
	paths := make([]string, len(d.Files))
	for i, f := range d.Files {
		paths[i] = f.Path
	}
	if len(paths) == 0 {
		return reviewPlan{}, core.Errorf(core.CodeValidation, "cannot review task %s: its diff is empty (nothing changed since %s)", t.ID, shortCommit(d.Base))
	}
	hunks := workspace.ParsePatch(d.Patch, paths)
	now := time.Now().UTC()
	p := reviewPlan{notice: prompt.Review{From: wo.describeSender(actor.String()), Text: text}}
	for i, c := range in {
		file := strings.TrimSpace(c.File)
		body := strings.TrimSpace(c.Text)
		end := c.EndLine
		if end == 0 {
			end = c.Line
		}
		where := fmt.Sprintf("comment %d (%s:%d)", i+1, file, c.Line)
		switch {
		case file == "":
			return reviewPlan{}, core.Errorf(core.CodeValidation, "comment %d: a file is required", i+1)
		case body == "":
			return reviewPlan{}, core.Errorf(core.CodeValidation, "%s: the comment's text is empty", where)
		case len(body) > maxReviewText:
			return reviewPlan{}, core.Errorf(core.CodeValidation, "%s: the text is %d bytes, over %d", where, len(body), maxReviewText)
		case c.Line < 1:
			return reviewPlan{}, core.Errorf(core.CodeValidation, "%s: lines are numbered from 1", where)
		case end < c.Line:
			return reviewPlan{}, core.Errorf(core.CodeValidation, "%s: the range ends at %d, before it starts", where, end)
		case end-c.Line >= maxReviewLines:
			return reviewPlan{}, core.Errorf(core.CodeValidation, "%s: a comment spans at most %d lines", where, maxReviewLines)
		}
		fh, ok := hunks[file]
		if !ok {
			if known(paths, file) {
				return reviewPlan{}, core.Errorf(core.CodeValidation, "%s: %s has no lines to comment on in the diff (deleted, binary, or past the patch's %d bytes)", where, file, api.MaxPatch)
			}
			return reviewPlan{}, core.Errorf(core.CodeValidation, "%s: %s is not in task %s's diff; the files changed: %s", where, file, t.ID, listPaths(paths))
		}
		lines, excerpt, ok := cutHunk(fh, c.Line, end)
		if !ok {
			return reviewPlan{}, core.Errorf(core.CodeValidation, "%s: lines %d-%d of %s are not all in one hunk of the diff; its hunks show lines %s", where, c.Line, end, file, hunkRanges(fh))
		}
		p.rows = append(p.rows, store.ReviewComment{TaskID: t.ID, Author: actor.String(), File: file, Line: c.Line, EndLine: end,
			Body: body, Lines: lines, Hunk: excerpt, CreatedAt: now})
		p.notice.Comments = append(p.notice.Comments, prompt.ReviewComment{File: file, Line: c.Line, EndLine: end, Text: body, Hunk: excerpt})
	}
	return p, nil
}

func known(paths []string, p string) bool {
	for _, k := range paths {
		if k == p {
			return true
		}
	}
	return false
}

func listPaths(paths []string) string {
	if len(paths) > 10 {
		return strings.Join(paths[:10], ", ") + fmt.Sprintf(" and %d more", len(paths)-10)
	}
	return strings.Join(paths, ", ")
}

// cutHunk finds the hunk showing the new lines from..to, all of them, and
// returns their text and the hunk's lines around them (its header first).
func cutHunk(hs []workspace.Hunk, from, to int) (lines, excerpt string, ok bool) {
	for _, h := range hs {
		first, last := -1, -1
		for i, l := range h.Lines {
			if l.Kind == '-' {
				continue
			}
			if l.New == from {
				first = i
			}
			if l.New == to {
				last = i
			}
		}
		if first < 0 || last < 0 {
			continue
		}
		var text []string
		for _, l := range h.Lines[first : last+1] {
			if l.Kind != '-' {
				text = append(text, l.Text)
			}
		}
		lo, hi := max(0, first-reviewContext), min(len(h.Lines), last+1+reviewContext)
		var b strings.Builder
		b.WriteString(h.Header)
		for _, l := range h.Lines[lo:hi] {
			b.WriteByte('\n')
			b.WriteByte(l.Kind)
			b.WriteString(l.Text)
		}
		return strings.Join(text, "\n"), b.String(), true
	}
	return "", "", false
}

// hunkRanges names the new lines each hunk shows: "1-4, 10-12".
func hunkRanges(hs []workspace.Hunk) string {
	var out []string
	for _, h := range hs {
		lo, hi := 0, 0
		for _, l := range h.Lines {
			if l.Kind == '-' {
				continue
			}
			if lo == 0 {
				lo = l.New
			}
			hi = l.New
		}
		if lo > 0 {
			out = append(out, fmt.Sprintf("%d-%d", lo, hi))
		}
	}
	if len(out) == 0 {
		return "none (only deletions)"
	}
	return strings.Join(out, ", ")
}

// Review serves api.Client's TaskReview (wire.TaskReview): the comments
// kept on the task, each open while the lines it points at still read as
// they did when it was made (in the worktree as it is now), outdated once
// they changed.
func (wo *Workspaces) Review(ctx context.Context, ref string) (api.ReviewView, error) {
	t, err := wo.authorized(ctx, core.ActorFrom(ctx), ref, ActReview)
	if err != nil {
		return api.ReviewView{}, err
	}
	return wo.reviewOf(ctx, t)
}

// reviewOf reads the task's comments and checks each one's state.
func (wo *Workspaces) reviewOf(ctx context.Context, t core.Task) (api.ReviewView, error) {
	rows, err := wo.k.db.ReviewComments(ctx, t.ID)
	if err != nil {
		return api.ReviewView{}, mapStoreErr(err, "review of "+t.ID)
	}
	v := api.ReviewView{TaskID: t.ID, Comments: make([]api.ReviewComment, 0, len(rows))}
	var root *os.Root
	if w := t.Workspace; w != nil && (w.Mode == core.WorkspaceWorktree || w.Mode == core.WorkspaceInherit) && w.Dir != "" {
		// Opened as a root: a path the agent turned into a link out of
		// the worktree is not followed.
		if root, err = os.OpenRoot(w.Dir); err != nil {
			v.Unchecked = fmt.Sprintf("the worktree %s cannot be read: %v", w.Dir, err)
		} else {
			defer root.Close()
		}
	} else if len(rows) > 0 {
		mode := core.WorkspaceShared
		if w != nil {
			mode = w.Mode
		}
		v.Unchecked = fmt.Sprintf("task %s's worktree is %s: the comments cannot be checked against it", t.ID, mode)
	}
	files := map[string][]string{}
	for _, r := range rows {
		c := api.ReviewComment{ID: r.ID, TaskID: r.TaskID, Author: core.ParseBy(r.Author), File: r.File, Line: r.Line, EndLine: r.EndLine,
			Text: r.Body, Lines: r.Lines, Hunk: r.Hunk, State: api.ReviewOpen, CreatedAt: r.CreatedAt}
		if root != nil {
			lines, ok := files[r.File]
			if !ok {
				lines = readLines(root, r.File)
				files[r.File] = lines
			}
			if r.EndLine > len(lines) || strings.Join(lines[r.Line-1:r.EndLine], "\n") != r.Lines {
				c.State = api.ReviewOutdated
			}
		}
		v.Comments = append(v.Comments, c)
	}
	return v, nil
}

// readLines reads a regular file of the worktree as lines (nil when it is
// gone, not a regular file, or too big to be the file commented on).
func readLines(root *os.Root, name string) []string {
	f, err := root.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxReviewFile {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxReviewFile+1))
	if err != nil || len(b) > maxReviewFile {
		return nil
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	return strings.Split(string(b), "\n")
}

// reviewComments turns kept rows into the comments a message result
// carries (open: they were just checked against the diff).
func reviewComments(rows []store.ReviewComment) []api.ReviewComment {
	out := make([]api.ReviewComment, len(rows))
	for i, r := range rows {
		out[i] = api.ReviewComment{ID: r.ID, TaskID: r.TaskID, Author: core.ParseBy(r.Author), File: r.File, Line: r.Line, EndLine: r.EndLine,
			Text: r.Body, Lines: r.Lines, Hunk: r.Hunk, State: api.ReviewOpen, CreatedAt: r.CreatedAt}
	}
	return out
}
