package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/textsafe"
)

// The verbs on a task's worktree: diff, merge, discard.

// TaskDiffOptions are `task diff`'s inputs.
type TaskDiffOptions struct {
	F    *Factory
	ID   string
	Stat bool
}

// NewCmdTaskDiff builds `kandev task diff`.
func NewCmdTaskDiff(f *Factory, runF func(*TaskDiffOptions) error) *cobra.Command {
	opts := &TaskDiffOptions{F: f}
	c := &cobra.Command{
		Use:   "diff ID",
		Short: "Show what a task changed in its worktree against its base",
		Long: `Show what a task changed: the commits on its branch and the uncommitted
work in its worktree, against the commit its branch started from. A task
running in a shared directory has no diff.`,
		Args: exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return taskDiffRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Stat, "stat", false, "only the files changed and their line counts")
	return c
}

func taskDiffRun(ctx context.Context, opts *TaskDiffOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	d, err := client.TaskDiff(ctx, opts.ID, core.DiffInput{Patch: !opts.Stat})
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(d)
	}
	if len(d.Files) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "No changes in task %s (branch %s) since %s\n", d.TaskID, d.Branch, shortID(d.Base))
		return nil
	}
	defer reviewLine(f, d)
	if opts.Stat {
		_, err := io.WriteString(f.IO.Out, d.Stat)
		return err
	}
	if f.rawOut != nil && isTerminal(f.rawOut) && f.Getenv("NO_COLOR") == "" {
		return writeColoredPatch(f.rawOut, d.Patch)
	}
	if _, err := io.WriteString(f.IO.Out, d.Patch); err != nil {
		return err
	}
	if d.Truncated {
		fmt.Fprintf(f.IO.ErrOut, "(diff cut at %d bytes; the rest is in %s)\n", core.MaxPatch, d.Dir)
	}
	return nil
}

// reviewLine says on stderr how the task's review comments stand by this diff.
func reviewLine(f *Factory, d core.TaskDiff) {
	if len(d.Comments) == 0 {
		return
	}
	open := 0
	for _, c := range d.Comments {
		if c.State == core.ReviewOpen {
			open++
		}
	}
	fmt.Fprintf(f.IO.ErrOut, "Review comments on task %s: %d open, %d outdated (kandev task review %s --list)\n", d.TaskID, open, len(d.Comments)-open, d.TaskID)
}

// writeColoredPatch writes a patch with git's colours, each line cleaned
// first: the patch is the agent's text and may carry escape sequences.
func writeColoredPatch(w io.Writer, patch string) error {
	const reset = "\x1b[m"
	for _, line := range strings.SplitAfter(patch, "\n") {
		if line == "" {
			continue
		}
		clean := textsafe.Clean(line)
		body := strings.TrimSuffix(clean, "\n")
		color := ""
		switch {
		case strings.HasPrefix(body, "diff --git"), strings.HasPrefix(body, "index "),
			strings.HasPrefix(body, "+++"), strings.HasPrefix(body, "---"):
			color = "\x1b[1m"
		case strings.HasPrefix(body, "@@"):
			color = "\x1b[36m"
		case strings.HasPrefix(body, "+"):
			color = "\x1b[32m"
		case strings.HasPrefix(body, "-"):
			color = "\x1b[31m"
		}
		if color != "" {
			clean = color + body + reset + clean[len(body):]
		}
		if _, err := io.WriteString(w, clean); err != nil {
			return err
		}
	}
	return nil
}

func shortID(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// TaskMergeOptions are `task merge`'s inputs.
type TaskMergeOptions struct {
	F     *Factory
	ID    string
	Input core.MergeInput
}

// NewCmdTaskMerge builds `kandev task merge`.
func NewCmdTaskMerge(f *Factory, runF func(*TaskMergeOptions) error) *cobra.Command {
	opts := &TaskMergeOptions{F: f}
	c := &cobra.Command{
		Use:   "merge ID",
		Short: "Merge a task's branch into the main checkout's branch",
		Long: `Merge a task's branch into the branch the repository's main checkout is
on. Uncommitted work in the task's worktree is committed on its branch
first. The merge is refused, changing nothing, when the main checkout has
uncommitted changes to tracked files, is on no branch, or the merge would
conflict; the task's agent must not be in a turn.`,
		Args: exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return taskMergeRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Input.Squash, "squash", false, "one commit on the main checkout's branch instead of a merge")
	c.Flags().StringVarP(&opts.Input.Message, "message", "m", "", "the merge (or squash) commit's message")
	return c
}

func taskMergeRun(ctx context.Context, opts *TaskMergeOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	res, err := client.MergeTask(ctx, opts.ID, opts.Input)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(res)
	}
	how := "Merged"
	if opts.Input.Squash {
		how = "Squashed"
	}
	fmt.Fprintf(f.IO.ErrOut, "%s %s into %s (%s)\n", how, res.Branch, res.Into, shortID(res.Commit))
	return nil
}

// TaskDiscardOptions are `task discard`'s inputs.
type TaskDiscardOptions struct {
	F   *Factory
	ID  string
	Yes bool
}

// NewCmdTaskDiscard builds `kandev task discard`.
func NewCmdTaskDiscard(f *Factory, runF func(*TaskDiscardOptions) error) *cobra.Command {
	opts := &TaskDiscardOptions{F: f}
	c := &cobra.Command{
		Use:   "discard ID --yes",
		Short: "Delete a task's worktree and branch, with any work not merged",
		Long: `Delete a task's worktree and its branch, with whatever they hold that was
not merged. The task stays (its workspace shows as discarded). Stop never
deletes a worktree, nor does archiving a task that is not done; archiving a
done task removes its worktree but keeps its branch. Needs --yes.`,
		Args: exactArgs(1, "one task ID"),
		PreRunE: func(c *cobra.Command, args []string) error {
			if !opts.Yes {
				return usagef("task discard deletes the task's worktree and branch, with any work not merged: pass --yes to confirm")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return taskDiscardRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Yes, "yes", false, "confirm: the work not merged is lost")
	return c
}

func taskDiscardRun(ctx context.Context, opts *TaskDiscardOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	t, err := client.DiscardTask(ctx, opts.ID)
	if err != nil {
		return err
	}
	w := t.Workspace
	if w == nil {
		w = &core.Workspace{}
	}
	return printTaskResult(f, t, "Discarded worktree %s and branch %s of task %s", w.Dir, w.Branch, t.ID)
}
