package cmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
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
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	d, err := client.TaskDiff(ctx, opts.ID, api.DiffInput{Patch: !opts.Stat})
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
		fmt.Fprintf(f.IO.ErrOut, "(diff cut at %d bytes; the rest is in %s)\n", api.MaxPatch, d.Dir)
	}
	return nil
}

// reviewLine says on stderr how the task's review comments stand by this diff.
func reviewLine(f *Factory, d api.TaskDiff) {
	if len(d.Comments) == 0 {
		return
	}
	open := 0
	for _, c := range d.Comments {
		if c.State == api.ReviewOpen {
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
	Input api.MergeInput
	// Done marks the task done after the merge; Archive marks it done and
	// archives it. Neither, on a terminal: ask.
	Done, Archive bool
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
conflict; the task's agent must not be in a turn.

Merged work is finished: --done marks the task done, --archive marks it
done and archives it (which removes its worktree, and its branch, merged or
squash-merged by kandev). Without either, on a terminal it asks (Enter:
done and archive); without a terminal it asks nothing and says how.`,
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
	c.Flags().BoolVar(&opts.Done, "done", false, "then mark the task done")
	c.Flags().BoolVar(&opts.Archive, "archive", false, "then mark the task done and archive it (its worktree and merged branch go)")
	return c
}

// ask asks a question on the terminal and returns the answer, trimmed and
// in lower case; without a terminal (or with --json) it asks nothing and
// returns ok false.
func (f *Factory) ask(question string) (string, bool) {
	if !f.IO.InTTY || f.JSON || f.IO.In == nil {
		return "", false
	}
	fmt.Fprint(f.IO.ErrOut, question)
	line, err := bufio.NewReader(f.IO.In).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(f.IO.ErrOut)
		return "", false
	}
	return strings.ToLower(strings.TrimSpace(line)), true
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
	if !f.JSON {
		how := "Merged"
		if opts.Input.Squash {
			how = "Squashed"
		}
		fmt.Fprintf(f.IO.ErrOut, "%s %s into %s (%s)\n", how, res.Branch, res.Into, shortID(res.Commit))
	}
	done, archive := opts.Done || opts.Archive, opts.Archive
	id := res.Task.ID
	if !done && !res.Task.Status.Terminal() {
		switch a, ok := f.ask("Mark task " + id + " done and archive it? [Y]es, [d]one only, [n]o: "); {
		case !ok:
			if !f.JSON {
				fmt.Fprintf(f.IO.ErrOut, "Finished? kandev task status %s done, then kandev task archive %s (or merge with --archive)\n", id, id)
			}
		case a == "" || a == "y" || a == "yes":
			done, archive = true, true
		case a == "d" || a == "done":
			done = true
		}
	}
	if done && res.Task.Status != core.StatusDone {
		if res.Task, err = client.SetTaskStatus(ctx, id, core.StatusDone); err != nil {
			return fmt.Errorf("merged, but marking task %s done failed: %w", id, err)
		}
		if !f.JSON {
			fmt.Fprintf(f.IO.ErrOut, "Task %s is done\n", id)
		}
	}
	if archive && !res.Task.Archived {
		if res.Task, err = client.ArchiveTask(ctx, id, api.ArchiveTaskInput{}); err != nil {
			return fmt.Errorf("merged and done, but archiving task %s failed: %w", id, err)
		}
		if !f.JSON {
			fmt.Fprintf(f.IO.ErrOut, "Archived task %s\n", id)
		}
	}
	if f.JSON {
		return f.printJSON(res)
	}
	return nil
}

// TaskDiscardOptions are `task discard`'s inputs.
type TaskDiscardOptions struct {
	F   *Factory
	ID  string
	Yes bool
	// Cancel cancels the task after the discard; without it, on a
	// terminal: ask.
	Cancel bool
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
done task removes its worktree but keeps its branch. Needs --yes.

Discarded work is finished: --cancel then cancels the task. Without it, on a
terminal it asks (Enter: cancel); without a terminal it asks nothing.`,
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
	c.Flags().BoolVar(&opts.Cancel, "cancel", false, "then cancel the task")
	return c
}

func taskDiscardRun(ctx context.Context, opts *TaskDiscardOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	t, err := client.DiscardTask(ctx, opts.ID, api.DiscardTaskInput{})
	if err != nil {
		return err
	}
	w := t.Workspace
	if w == nil {
		w = &core.Workspace{}
	}
	if !f.JSON {
		fmt.Fprintf(f.IO.ErrOut, "Discarded worktree %s and branch %s of task %s\n", w.Dir, w.Branch, t.ID)
	}
	cancel := opts.Cancel
	if !cancel && !t.Status.Terminal() {
		a, ok := f.ask("Cancel task " + t.ID + " too? [Y/n]: ")
		cancel = ok && (a == "" || a == "y" || a == "yes")
	}
	if cancel && t.Status != core.StatusCancelled {
		if t, err = client.SetTaskStatus(ctx, t.ID, core.StatusCancelled); err != nil {
			return fmt.Errorf("discarded, but cancelling task %s failed: %w", opts.ID, err)
		}
		if !f.JSON {
			fmt.Fprintf(f.IO.ErrOut, "Cancelled task %s\n", t.ID)
		}
	}
	if f.JSON {
		return f.printJSON(t)
	}
	return nil
}
