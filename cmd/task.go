package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
)

// Every command is built the same way (gh's): NewCmdX(f, runF) parses the
// arguments and flags into an XOptions and calls runF with it, or xRun
// when runF is nil. Tests pass a runF that keeps the options, so a flag's
// parsing is tested without a daemon; the group constructors pass nil.

// NewCmdTask groups the task verbs. The files task_*.go hold them by
// what they do: create, list, show, edit (edit, status, archive), run
// (start, message, stop, answer), log, queue, handoff (handoff, block)
// worktree (diff, merge, discard) and shell (path, shell).
func NewCmdTask(f *Factory) *cobra.Command {
	c := group("task", "Create, inspect and steer tasks", "")
	c.AddCommand(
		NewCmdTaskCreate(f, nil),
		NewCmdTaskList(f, nil),
		NewCmdTaskStats(f, nil),
		NewCmdTaskShow(f, nil),
		NewCmdTaskEdit(f, nil),
		NewCmdTaskArchive(f, nil),
		NewCmdTaskStatus(f, nil),
		NewCmdTaskStart(f, nil),
		NewCmdTaskMessage(f, nil),
		NewCmdTaskStop(f, nil),
		NewCmdTaskAnswer(f, nil),
		NewCmdTaskLog(f, nil),
		NewCmdTaskHandoff(f, nil),
		NewCmdTaskBlock(f, nil),
		NewCmdTaskQueue(f, nil),
		NewCmdTaskBudget(f, nil),
		NewCmdTaskDiff(f, nil),
		NewCmdTaskReview(f, nil),
		NewCmdTaskPush(f, nil),
		NewCmdTaskPR(f, nil),
		NewCmdTaskMerge(f, nil),
		NewCmdTaskDiscard(f, nil),
		NewCmdTaskPath(f, nil),
		NewCmdTaskShell(f, nil),
	)
	return c
}

// printTaskResult prints the task a verb changed: the task with --json,
// else a status line on stderr.
func printTaskResult(f *Factory, t core.Task, format string, args ...any) error {
	if f.JSON {
		return f.printJSON(t)
	}
	fmt.Fprintf(f.IO.ErrOut, format+"\n", args...)
	return nil
}
