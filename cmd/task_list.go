package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// TaskListOptions are `task list`'s inputs.
type TaskListOptions struct {
	F     *Factory
	Input api.ListTasksInput
	// Limit caps the text list's rows (0: no cap).
	Limit int
	// Wide ends each row with its spend.
	Wide bool
}

// NewCmdTaskList builds `kandev task list`.
func NewCmdTaskList(f *Factory, runF func(*TaskListOptions) error) *cobra.Command {
	opts := &TaskListOptions{F: f}
	c := &cobra.Command{
		Use:   "list [--all] [--limit N] [--root ID] [--wide]",
		Short: "List tasks as a tree",
		Long: `List tasks as a tree. The text list shows the open tasks (neither done, cancelled nor
archived) and says on standard error how many it hid; --all shows every task. A task whose
parent is hidden prints as a root. --limit N prints the first N rows of the tree.

Each row starts with the task's stage, its status as shown: ○ todo (nothing ran on it
yet), ● in_progress (a question keeps it), ◑ back (its agent ran and it is with a person
again: back to you, or escalated to a person), ◐ review (handed over, or stopped),
✓ done, ✗ cancelled. Its stored status, which task status moves, can differ only for
back, stored as todo.

--json prints every task but the archived ones (with --all, those too), in creation order,
the daemon's bytes as they come: a script filters them itself. Each has "status" and
"stage".`,
		Example: `  kandev task list
  kandev task list --all --limit 50
  kandev task list --root k3f9qa`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Limit < 0 {
				return usagef("--limit takes a number of rows (0: all)")
			}
			if opts.Limit > 0 && f.JSON {
				return usagef("--limit is for the text list; --json prints every task (filter it with jq)")
			}
			if runF != nil {
				return runF(opts)
			}
			return taskListRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Input.All, "all", false, "every task: done, cancelled and archived ones too (--json: include archived tasks)")
	c.Flags().IntVar(&opts.Limit, "limit", 0, "print at most `N` rows of the tree (0: all)")
	c.Flags().StringVar(&opts.Input.Root, "root", "", "only this task and its descendants")
	c.Flags().BoolVar(&opts.Wide, "wide", false, "end each row with its spend: cost and tokens, a parent's (Σ) its subtree's")
	return c
}

// rawTaskLister is a client that hands over the daemon's JSON listing as
// it came (daemonclient.Client does).
type rawTaskLister interface {
	ListTasksRaw(ctx context.Context, in api.ListTasksInput, w io.Writer) error
}

// taskSummaryScanner is a client that gives a listing's summaries one at a
// time as it decodes them (daemonclient.Client does).
type taskSummaryScanner interface {
	ScanTaskSummaries(ctx context.Context, in api.ListTasksInput, count func(n int), fn func(*core.Task) error) error
}

// scanTasks gives fn the listing's tasks in order: streamed summaries when
// the client can, else the summaries or tasks listed at once. count, when
// not nil, hears the number of tasks first.
func scanTasks(ctx context.Context, client api.Client, in api.ListTasksInput, count func(n int), fn func(*core.Task) error) error {
	if sc, ok := client.(taskSummaryScanner); ok {
		return sc.ScanTaskSummaries(ctx, in, count, fn)
	}
	list := client.ListTasks
	if sc, ok := client.(api.TaskSummaries); ok {
		list = sc.ListTaskSummaries
	}
	tasks, err := list(ctx, in)
	if err != nil {
		return err
	}
	if count != nil {
		count(len(tasks))
	}
	for i := range tasks {
		if err := fn(&tasks[i]); err != nil {
			return err
		}
	}
	return nil
}

func taskListRun(ctx context.Context, opts *TaskListOptions) error {
	f := opts.F
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	if f.JSON {
		// The daemon's JSON as it comes: it is already the documented
		// shape, and large lists stay fast.
		if raw, ok := client.(rawTaskLister); ok {
			return f.copyJSON(func(w io.Writer) error { return raw.ListTasksRaw(ctx, opts.Input, w) })
		}
		tasks, err := client.ListTasks(ctx, opts.Input)
		if err != nil {
			return err
		}
		return f.printJSON(tasks)
	}
	// Each summary is rendered as a row when it is decoded, and each
	// top-level subtree is printed as soon as the next top-level task
	// arrives: the route lists in the tree's order (ADR 0037), so only one
	// subtree is held at a time (ADR 0035). The default asks for archived
	// tasks too, only to count what it hides.
	in := opts.Input
	in.All = true
	// Every field of a row is cleaned as it is rendered (appendRow); the
	// cleaning writer would clean all 13 MB of a 100,000-task tree again,
	// its box-drawing characters keeping it off its plain-ASCII fast path.
	out := f.IO.Out
	if f.rawOut != nil {
		out = f.rawOut
	}
	st := newTreeStream(out, opts.Limit)
	st.tr.wide = opts.Wide
	total, shown := -1, 0
	var hidden map[string]int
	err = scanTasks(ctx, client, in, func(n int) { total = n }, func(t *core.Task) error {
		if !opts.Input.All && (t.Archived || t.Status.Terminal()) {
			if hidden == nil {
				hidden = map[string]int{}
			}
			if t.Archived {
				hidden["archived"]++
			} else {
				hidden[string(t.Status)]++
			}
			return st.add(t, false)
		}
		shown++
		if err := st.add(t, true); err != nil {
			return err
		}
		if st.full() && opts.Input.All && total >= 0 {
			// Every task is a row and the header counted them: the
			// rest of the listing would change nothing printed.
			return errEnoughRows
		}
		return nil
	})
	if errors.Is(err, errEnoughRows) {
		shown, err = total, nil
	}
	if err != nil {
		return err
	}
	if err := st.close(); err != nil {
		return err
	}
	printed := st.printed
	switch {
	case shown == 0 && len(hidden) == 0:
		fmt.Fprintln(f.IO.ErrOut, "No tasks. Create one with: kandev task create TITLE")
	case shown == 0:
		fmt.Fprintln(f.IO.ErrOut, "No open tasks.")
	}
	if more := shown - printed; more > 0 {
		fmt.Fprintf(f.IO.ErrOut, "%d more %s not shown (--limit %d)\n", more, plural(more, "task", "tasks"), opts.Limit)
	}
	if note := hiddenNote(hidden); note != "" {
		fmt.Fprintln(f.IO.ErrOut, note)
	}
	return nil
}

// hiddenNote says what the default filter hid: "12 done, 3 cancelled and
// 1 archived tasks hidden; --all shows them".
func hiddenNote(hidden map[string]int) string {
	var parts []string
	total := 0
	for _, k := range []string{string(core.StatusDone), string(core.StatusCancelled), "archived"} {
		if n := hidden[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
			total += n
		}
	}
	if total == 0 {
		return ""
	}
	list := parts[len(parts)-1]
	if len(parts) > 1 {
		list = strings.Join(parts[:len(parts)-1], ", ") + " and " + list
	}
	return list + " " + plural(total, "task", "tasks") + " hidden; --all shows them"
}

// errEnoughRows stops reading a listing whose rest cannot change the
// output.
var errEnoughRows = errors.New("enough rows")

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
