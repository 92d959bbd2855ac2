package cmd

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemonclient"
	"github.com/kandev/kandev/core/textsafe"
)

// completionTimeout bounds one completion's question to the daemon: a
// shell waits on it at every Tab.
const completionTimeout = 3 * time.Second

// completeFunc lists candidates ("value\tdescription") from a daemon client.
type completeFunc func(ctx context.Context, c *daemonclient.Client) []string

// registerCompletions attaches dynamic completion (task ids with their
// titles, profiles, roles, people) to the commands and flags that take
// them, by command path, so the commands themselves stay as they are.
func registerCompletions(f *Factory, root *cobra.Command) {
	byPath := map[string]*cobra.Command{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		byPath[strings.TrimPrefix(c.CommandPath(), "kandev ")] = c
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)

	tasks := f.completer(completeTasks)
	asking := f.completer(completeAskingTasks)
	profiles := f.completer(completeProfiles)
	roles := f.completer(completeRoles)
	assignees := f.completer(completeRoles, completePersons)
	handoffTo := f.completer(completeRoles, completePersons, func(context.Context, *daemonclient.Client) []string {
		return []string{"back\twhoever handed the task to its current assignee"}
	})

	args := map[string]cobra.CompletionFunc{
		"task show": firstArg(tasks), "task edit": firstArg(tasks), "task archive": firstArg(tasks),
		"task start": firstArg(tasks), "task message": firstArg(tasks), "task stop": firstArg(tasks),
		"task answer": firstArg(asking), "task handoff": firstArg(tasks), "task block": firstArg(tasks),
		"task queue": firstArg(tasks), "task log": firstArg(tasks), "task status": completeTaskStatus(tasks),
		"wait":      firstArg(tasks),
		"task path": firstArg(tasks), "task shell": firstArg(tasks),
		"profile show": firstArg(profiles), "profile remove": firstArg(profiles),
		"role show": firstArg(roles), "role edit": firstArg(roles), "role remove": firstArg(roles),
	}
	for path, fn := range args {
		if c := byPath[path]; c != nil {
			c.ValidArgsFunction = fn
		}
	}
	flags := []struct {
		path, flag string
		fn         cobra.CompletionFunc
	}{
		{"task create", "parent", tasks}, {"task create", "blocked-by", tasks},
		{"task create", "profile", profiles}, {"task create", "assignee", assignees},
		{"task list", "root", tasks}, {"task stats", "root", tasks}, {"task block", "on", tasks},
		{"task handoff", "to", handoffTo}, {"events", "task", tasks},
		{"role add", "profile", profiles}, {"role add", "reports-to", assignees},
		{"role edit", "profile", profiles}, {"role edit", "reports-to", assignees},
	}
	for _, fl := range flags {
		if c := byPath[fl.path]; c != nil && c.Flags().Lookup(fl.flag) != nil {
			_ = c.RegisterFlagCompletionFunc(fl.flag, fl.fn)
		}
	}
}

// completer turns sources into a cobra completion of one word. It asks
// only a daemon that already runs: a Tab must never start one, so without
// it there are no candidates.
func (f *Factory) completer(sources ...completeFunc) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		home, err := f.ResolveHome()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(c.Context(), completionTimeout)
		defer cancel()
		client, ok := daemonclient.Ping(ctx, home)
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer client.Close()
		var out []cobra.Completion
		for _, src := range sources {
			for _, cand := range src(ctx, client) {
				if strings.HasPrefix(cand, toComplete) {
					out = append(out, cand)
				}
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// firstArg completes a command's first argument only: the ones after it
// (a message, an answer) are free text.
func firstArg(fn cobra.CompletionFunc) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return fn(c, args, toComplete)
	}
}

// completeTaskStatus completes a task id, then a status.
func completeTaskStatus(tasks cobra.CompletionFunc) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return tasks(c, args, toComplete)
		case 1:
		default:
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, s := range core.Statuses {
			if strings.HasPrefix(string(s), toComplete) {
				out = append(out, string(s))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// described is a candidate with its description, cleaned: a title is
// untrusted text and reaches the terminal through the shell's menu.
func described(value, desc string) string {
	if desc = strings.Join(strings.Fields(textsafe.Clean(desc)), " "); desc == "" {
		return value
	}
	return value + "\t" + desc
}

func completeTasks(ctx context.Context, c *daemonclient.Client) []string {
	ts, err := c.ListTaskSummaries(ctx, api.ListTasksInput{})
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(ts))
	for i, t := range ts {
		// The stage, as task list shows it (core.StageOf).
		out = append(out, described(t.ID, truncate(t.Title, 60)+" ("+string(core.StageOf(&ts[i]))+")"))
	}
	return out
}

// completeAskingTasks offers only the tasks with a question for you: the
// ones task answer takes, each with its question.
func completeAskingTasks(ctx context.Context, c *daemonclient.Client) []string {
	ts, err := c.ListTaskSummaries(ctx, api.ListTasksInput{})
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range ts {
		if q := t.PendingQuestion; q != nil && q.Status == core.QuestionPending && q.Kind.ForPerson() && !t.Archived {
			out = append(out, described(t.ID, truncate(t.Title, 40)+": "+truncate(q.Text, 60)))
		}
	}
	return out
}

func completeProfiles(ctx context.Context, c *daemonclient.Client) []string {
	ps, err := c.ListProfiles(ctx)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, described(p.Name, p.CommandLine()))
	}
	return out
}

func completeRoles(ctx context.Context, c *daemonclient.Client) []string {
	rs, err := c.ListRoles(ctx)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, described(r.Name, "role, profile "+r.Profile))
	}
	return out
}

func completePersons(ctx context.Context, c *daemonclient.Client) []string {
	ps, err := c.ListPersons(ctx)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, described(p.Name, "person"))
	}
	return out
}
