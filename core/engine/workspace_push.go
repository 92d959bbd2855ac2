package engine

// A task's work shared past this machine: its branch pushed (Push), a
// pull or merge request opened for it (PullRequest; openRequest for the
// provider tools) and its review read back (requestReview), and the git
// host the provider tools are for (providerHost).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/workspace"
	"github.com/kandev/kandev/store"
)

// Push serves api.Client's PushTask (wire.PushTask): the task's branch to
// a remote of its repository, its uncommitted work committed first with a
// message naming the task. Only a person pushes: it reaches past this
// machine. Like a merge, it waits for no turn: an agent in a turn in the
// worktree refuses it.
func (wo *Workspaces) Push(ctx context.Context, ref string, in api.PushInput) (api.PushResult, error) {
	res, _, err := wo.push(ctx, ref, in.Remote)
	if err != nil {
		return api.PushResult{}, pushErr(err)
	}
	return res, nil
}

// push is Push with workspace's errors as they are (a pull request
// goes on from a remote that is up to date), and the task's worktree.
func (wo *Workspaces) push(ctx context.Context, ref, remote string) (api.PushResult, workspace.Worktree, error) {
	actor := core.ActorFrom(ctx)
	t, wt, err := wo.worktreeTask(ctx, ref, ActPush, true)
	if err != nil {
		return api.PushResult{}, wt, err
	}
	own := agentOf(actor, t.ID) // else a person (worktreeTask asked may(ActPush))
	gone := t.Workspace.Mode == core.WorkspaceRetired
	if !gone {
		for _, c := range append([]core.Task{t}, wo.inheritors(t)...) {
			if own && c.ID == t.ID {
				continue // the agent calling is that turn
			}
			if s := c.Session; s != nil && (s.State == core.SessionStarting || s.State == core.SessionRunning) {
				return api.PushResult{}, wt, core.Errorf(core.CodeConflict, "task %s's agent is in a turn in this worktree; wait for it or stop it (kandev task stop %s) first", c.ID, c.ID)
			}
		}
		if _, err := os.Stat(wt.Dir); err != nil {
			return api.PushResult{}, wt, core.Errorf(core.CodeNotFound, "task %s's worktree %s is gone: %v", t.ID, wt.Dir, err)
		}
	}
	res, err := wo.ws.Push(ctx, wt, workspace.PushOptions{Remote: remote, Gone: gone,
		Message: fmt.Sprintf("kandev: task %s: %s", t.ID, oneLineTitle(t.Title))})
	out := api.PushResult{Task: t, Branch: wt.Branch, Remote: res.Remote, Commit: res.Commit, Committed: res.Committed}
	if err != nil {
		return out, wt, err
	}
	what := "pushed " + wt.Branch + " to " + res.Remote + " (" + shortCommit(res.Commit) + ") by " + actor.String()
	if res.Committed {
		what += ", its uncommitted work committed first"
	}
	wo.k.note(ctx, t.ID, "", core.MsgStatus, actor.String(), what, nil)
	if out.Task, err = wo.k.refresh(ctx, t.ID); err != nil {
		return out, wt, err
	}
	return out, wt, nil
}

// pushErr maps a push's workspace errors to the client's codes.
func pushErr(err error) error {
	var ce *core.Error
	switch {
	case errors.As(err, &ce):
		return err
	case errors.Is(err, workspace.ErrRefused), errors.Is(err, workspace.ErrNothingToPush):
		return core.Errorf(core.CodeConflict, "%v", err)
	}
	return core.Errorf(core.CodeInternal, "%v", err)
}

// linkPullRequest is the task_links kind of a task's pull request URL.
const linkPullRequest = "pull_request"

// PullRequest serves api.Client's PullRequestTask (wire.PullRequestTask):
// push the task's branch, then open a pull request for it with gh (title
// from the task, body from its last handoff and its diff's stat), and
// record its URL on the task. A repository whose origin is on GitLab gets a
// merge request (glab).
func (wo *Workspaces) PullRequest(ctx context.Context, ref string, in api.PullRequestInput) (api.PullRequestResult, error) {
	host := ""
	if t, err := wo.task(ctx, ref); err == nil && t.Workspace != nil && in.Remote == "" {
		host = wo.ws.RemoteHost(ctx, t.Workspace.Repo, "")
	}
	return wo.openRequest(ctx, ref, in, host)
}

// openRequest pushes and opens the pull request (or, for host gitlab,
// the merge request).
func (wo *Workspaces) openRequest(ctx context.Context, ref string, in api.PullRequestInput, host string) (api.PullRequestResult, error) {
	pushed, wt, err := wo.push(ctx, ref, in.Remote)
	if err != nil && !errors.Is(err, workspace.ErrUpToDate) {
		return api.PullRequestResult{}, pushErr(err)
	}
	t := pushed.Task
	body := wo.pullRequestBody(ctx, t)
	open := workspace.OpenPullRequest
	if host == workspace.HostGitLab {
		open = workspace.OpenMergeRequest
	}
	// The caller's PATH only from a person (the CLI, the UI): an agent
	// must not choose which program the daemon runs unconfined.
	tools := workspace.ToolPath{}
	if core.ActorFrom(ctx).IsPerson() {
		tools.Path = in.Path
	}
	u, err := open(ctx, wt.Repo, workspace.PullRequestOptions{Head: wt.Branch, Base: strings.TrimSpace(in.Base),
		Title: oneLineTitle(t.Title), Body: body, Draft: in.Draft, Tools: tools,
		Remote: wo.ws.RemoteURL(ctx, wt.Repo, pushed.Remote)})
	switch {
	case errors.Is(err, workspace.ErrNoHostCLI):
		return api.PullRequestResult{}, core.Errorf(core.CodeUnavailable, "%v (the branch %s was pushed to %s)", err, wt.Branch, pushed.Remote)
	case err != nil:
		return api.PullRequestResult{}, core.Errorf(core.CodeConflict, "%v (the branch %s was pushed to %s)", err, wt.Branch, pushed.Remote)
	}
	actor := core.ActorFrom(ctx)
	now := time.Now().UTC()
	err = wo.k.commit(ctx, func(tx *store.Tx, ch *changes) error {
		if err := tx.SetTaskLink(ctx, t.ID, linkPullRequest, u, now); err != nil {
			return err
		}
		ch.touch(t.ID)
		return ch.noteTx(ctx, tx, t.ID, core.MsgStatus, actor.String(), "opened pull request "+u+" for "+wt.Branch+" by "+actor.String(), map[string]any{})
	})
	if err != nil {
		return api.PullRequestResult{}, core.Errorf(core.CodeInternal, "pull request %s opened, but not recorded on task %s: %v", u, t.ID, err)
	}
	t, _ = wo.k.cached(t.ID) // refreshed by the commit, its URL in its view
	return api.PullRequestResult{Task: t, URL: u, Push: pushed}, nil
}

// providerHost is the git host the provider group has tools for, of
// the task's repository's origin: GitHub, or GitLab when glab is on PATH;
// "" otherwise (no worktree, no origin, another host).
func (wo *Workspaces) providerHost(t core.Task) string {
	w := t.Workspace
	if w == nil || w.Repo == "" || (w.Mode != core.WorkspaceWorktree && w.Mode != core.WorkspaceInherit) {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch wo.ws.RemoteHost(ctx, w.Repo, "") {
	case workspace.HostGitHub:
		return capability.HostGitHub
	case workspace.HostGitLab:
		if _, err := exec.LookPath("glab"); err == nil {
			return capability.HostGitLab
		}
	}
	return ""
}

// RequestReview is what get_pull_request_comments_kandev and
// get_merge_request_comments_kandev return: the host's own JSON (GitHub)
// or text (GitLab), bounded.
type RequestReview struct {
	TaskID string          `json:"task_id"`
	Branch string          `json:"branch"`
	URL    string          `json:"url,omitempty"`
	View   json.RawMessage `json:"pull_request,omitempty"`  // gh pr view --json
	Inline json.RawMessage `json:"line_comments,omitempty"` // the comments on lines of the diff
	Text   string          `json:"text,omitempty"`          // glab mr view --comments
}

// requestReview reads the review of the caller's own task's pull (or
// merge) request.
func (wo *Workspaces) requestReview(ctx context.Context, actor core.Actor, host string) (RequestReview, error) {
	t, wt, err := wo.worktreeTask(ctx, actor.TaskID, ActRequestReview, false)
	if err != nil {
		return RequestReview{}, err
	}
	out := RequestReview{TaskID: t.ID, Branch: wt.Branch}
	if t.Workspace != nil {
		out.URL = t.Workspace.PullRequest
	}
	if host == capability.HostGitLab {
		out.Text, err = workspace.MergeRequestReview(ctx, wt.Repo, wt.Branch)
	} else {
		out.View, out.Inline, err = workspace.PullRequestReview(ctx, wt.Repo, wt.Branch)
	}
	switch {
	case errors.Is(err, workspace.ErrNoHostCLI):
		return RequestReview{}, core.Errorf(core.CodeUnavailable, "%v", err)
	case errors.Is(err, workspace.ErrNoRequest):
		return RequestReview{}, core.Errorf(core.CodeNotFound, "%v; open it with the open tool first", err)
	case err != nil:
		return RequestReview{}, core.Errorf(core.CodeConflict, "%v", err)
	}
	return out, nil
}

// pullRequestBody is the task's last handoff message (what its agent said
// it did) and the stat of its diff.
func (wo *Workspaces) pullRequestBody(ctx context.Context, t core.Task) string {
	var b strings.Builder
	if m, err := wo.k.db.LastMessageOfKind(ctx, t.ID, string(core.MsgHandoff)); err == nil && strings.TrimSpace(m.Text) != "" {
		b.WriteString(strings.TrimSpace(m.Text))
		b.WriteString("\n\n")
	} else if d := strings.TrimSpace(t.Description); d != "" {
		b.WriteString(d)
		b.WriteString("\n\n")
	}
	if d, err := wo.Diff(ctx, t.ID, api.DiffInput{}); err == nil && d.Stat != "" {
		b.WriteString("```\n")
		b.WriteString(cutAtLine(d.Stat, 8<<10))
		b.WriteString("```\n\n")
	}
	if t.Source != nil && t.Workspace != nil {
		// The tracker closes the task's issue when the request merges.
		if line := closingLine(t, wo.ws.RemoteURL(ctx, t.Workspace.Repo, "")); line != "" {
			b.WriteString(line)
			b.WriteString("\n\n")
		}
	}
	fmt.Fprintf(&b, "Opened by kandev from task %s.\n", t.ID)
	return b.String()
}

// oneLineTitle is a title fit for a commit's subject line.
func oneLineTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 72 {
		s = cutAtLine(s, 72)
	}
	return s
}
