package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/config"
	"github.com/kandev/kandev/core/tracker"
	"github.com/kandev/kandev/core/workspace"
)

// Tasks from tracker issues (docs/trackers.md): the issue is read here, in
// the CLI, as the user (their gh or glab login, their Linear key, their
// repository's origin); the daemon records the source and keeps an issue
// to one task (ADR 0068).

// trackerClient is a tracker client run in dir, Linear's key and endpoint
// from the environment or config.toml.
func (f *Factory) trackerClient(dir string) (*tracker.Client, error) {
	cfg, err := config.Load(f.Getenv)
	if err != nil {
		return nil, err
	}
	key, err := cfg.Get("linear_api_key")
	if err != nil {
		return nil, err
	}
	u, err := cfg.Get("linear_url")
	if err != nil {
		return nil, err
	}
	return &tracker.Client{Dir: dir, LinearToken: key.Value, LinearURL: u.Value}, nil
}

// trackerErr gives a tracker's fault its code (the exit status, the MCP
// and JSON error) and names it in the details: {"fault": "not_logged_in"}.
func trackerErr(err error) error {
	if err == nil {
		return nil
	}
	var ce *core.Error
	if errors.As(err, &ce) {
		return err
	}
	code := core.CodeUnavailable
	switch {
	case errors.Is(err, tracker.ErrNoIssue):
		code = core.CodeNotFound
	case errors.Is(err, tracker.ErrForbidden):
		code = core.CodeForbidden
	case errors.Is(err, tracker.ErrUnknownRepo), errors.Is(err, tracker.ErrBadAnswer):
		code = core.CodeValidation
	}
	e := core.Errorf(code, "%v", err)
	if fault := tracker.Fault(err); fault != "" {
		return e.WithDetails(map[string]string{"fault": fault})
	}
	return e
}

// fromIssue fills a create from an issue: its title and description
// unless given (the description is the issue's text: title, state,
// labels, body, last comments, bounded), its source, and the text the
// agent's first prompt carries.
func fromIssue(in api.CreateTaskInput, is tracker.Issue) api.CreateTaskInput {
	text := is.Text()
	if strings.TrimSpace(in.Title) == "" {
		in.Title = is.Title
	}
	if strings.TrimSpace(in.Description) == "" {
		in.Description = text
	}
	in.Source = &core.TaskSource{Kind: is.Ref.Kind, Ref: is.Source, URL: is.URL}
	in.SourceText = text
	return in
}

// createDefaults fills what a top-level create takes from where kandev
// runs: the directory, the configured profile and workspace.
func createDefaults(f *Factory, in *api.CreateTaskInput) error {
	// A child without --cwd works where its parent works (in its
	// worktree, if it has one): the daemon fills it in.
	if in.CWD == "" && in.ParentID == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		in.CWD = wd
	} else if in.CWD != "" {
		if abs, err := filepath.Abs(in.CWD); err == nil {
			in.CWD = abs
		}
	}
	// A child without --profile takes its parent's (the daemon's rule);
	// the configured default is for top-level tasks; a task given an
	// assignee takes the profile its role runs (the daemon's rule too),
	// so none is filled in for it.
	if in.Profile == "" && in.ParentID == "" && in.Assignee == "" {
		p, err := f.configuredProfile()
		if err != nil {
			return err
		}
		in.Profile = p
	}
	// So is the configured workspace (a child's follows its parent).
	if in.Workspace == "" && in.ParentID == "" {
		w, err := f.configuredWorkspace()
		if err != nil {
			return err
		}
		in.Workspace = w
	}
	return nil
}

// IssuesOptions are `kandev issues`' inputs.
type IssuesOptions struct {
	F    *Factory
	Dir  string // where the repository is ("" = the current directory)
	Team string
	List tracker.ListOptions
}

// NewCmdIssues builds `kandev issues` and its import.
func NewCmdIssues(f *Factory, runF func(*IssuesOptions) error) *cobra.Command {
	opts := &IssuesOptions{F: f}
	c := &cobra.Command{
		Use:   "issues",
		Short: "List the open issues of this repository's tracker (GitHub, GitLab, Linear)",
		Long: `List the open issues of the current repository's tracker: GitHub (with gh) or GitLab
(with glab), found from the repository's origin, or a Linear team (--team, or
linear_team in config.toml, with LINEAR_API_KEY). Each issue already imported names
its task. Import some with kandev issues import; see docs/trackers.md.`,
		Example: `  kandev issues --label bug
  kandev issues --assignee @me --json
  kandev issues --team ENG
  kandev issues import 12 15 --autopilot --start`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return issuesRun(c.Context(), opts)
		},
	}
	issueFilterFlags(c, opts)
	c.AddCommand(NewCmdIssuesImport(f, nil))
	return c
}

func issueFilterFlags(c *cobra.Command, opts *IssuesOptions) {
	fl := c.Flags()
	fl.StringVar(&opts.Team, "team", "", "a Linear team's key (ENG): its issues rather than the repository's (default: config linear_team where origin is neither GitHub nor GitLab)")
	fl.StringVar(&opts.List.Label, "label", "", "only issues with this label")
	fl.StringVar(&opts.List.Assignee, "assignee", "", "only issues assigned to this user (@me for you)")
	fl.StringVar(&opts.List.Milestone, "milestone", "", "only issues of this milestone (Linear: project milestone)")
	fl.IntVar(&opts.List.Limit, "limit", 30, fmt.Sprintf("at most this many (up to %d)", tracker.MaxList))
}

// project is the tracker project issues are listed in: --team's Linear
// team, else the origin's GitHub or GitLab repository, else the
// configured Linear team.
func (opts *IssuesOptions) project(ctx context.Context) (tracker.Project, error) {
	if opts.Team != "" {
		return tracker.LinearTeam(opts.Team), nil
	}
	dir := opts.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return tracker.Project{}, err
		}
		dir = wd
	}
	origin, gitErr := workspace.Git(ctx, workspace.GitCall{Dir: dir, Timeout: 10 * time.Second, Args: []string{"remote", "get-url", "--", "origin"}})
	p, err := tracker.ProjectOf(strings.TrimSpace(origin))
	if gitErr != nil {
		err = fmt.Errorf("%w: %s has no git origin kandev can read; give a Linear team with --team", tracker.ErrUnknownRepo, dir)
	}
	if err == nil {
		return p, nil
	}
	cfg, cerr := config.Load(opts.F.Getenv)
	if cerr != nil {
		return tracker.Project{}, cerr
	}
	if team, _ := cfg.Get("linear_team"); team.Value != "" {
		return tracker.LinearTeam(team.Value), nil
	}
	return tracker.Project{}, trackerErr(err)
}

// imported maps issue references to the tasks that have them.
func imported(ctx context.Context, client api.Client) (map[string]string, error) {
	tasks, err := client.ListTasks(ctx, api.ListTasksInput{All: true})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, t := range tasks {
		if t.Source != nil {
			out[t.Source.Ref] = t.ID
		}
	}
	return out, nil
}

// IssueRow is one issue of a listing, with the task that has it.
type IssueRow struct {
	tracker.Issue
	TaskID string `json:"task_id,omitempty"`
}

func issuesRun(ctx context.Context, opts *IssuesOptions) error {
	f := opts.F
	p, err := opts.project(ctx)
	if err != nil {
		return err
	}
	tc, err := f.trackerClient(opts.Dir)
	if err != nil {
		return err
	}
	list, err := tc.List(ctx, p, opts.List)
	if err != nil {
		return trackerErr(err)
	}
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	have, err := imported(ctx, client)
	if err != nil {
		return err
	}
	rows := make([]IssueRow, 0, len(list))
	for _, is := range list {
		rows = append(rows, IssueRow{Issue: is, TaskID: have[is.Source]})
	}
	if f.JSON {
		return f.printJSON(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "No open issues in %s match\n", p)
		return nil
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ISSUE\tTITLE\tLABELS\tTASK")
	for _, r := range rows {
		task := r.TaskID
		if task == "" {
			task = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", issueLabel(r.Ref), cutTitle(r.Title, 60), strings.Join(r.Labels, ","), task)
	}
	return tw.Flush()
}

// cutTitle keeps a listing's title to n runes.
func cutTitle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// issueLabel is how a listing names an issue of its project: #12, ENG-123.
func issueLabel(r tracker.Ref) string {
	if r.Kind == tracker.Linear {
		return r.Key
	}
	return fmt.Sprintf("#%d", r.Number)
}

// IssuesImportOptions are `kandev issues import`'s inputs.
type IssuesImportOptions struct {
	IssuesOptions
	Issues []string
	Input  api.CreateTaskInput
}

// NewCmdIssuesImport builds `kandev issues import`.
func NewCmdIssuesImport(f *Factory, runF func(*IssuesImportOptions) error) *cobra.Command {
	opts := &IssuesImportOptions{IssuesOptions: IssuesOptions{F: f}}
	c := &cobra.Command{
		Use:   "import ISSUE...",
		Short: "Create a task from each issue, once",
		Long: `Create a task from each issue: its number in this repository's tracker (12), a Linear
identifier (ENG-123, or 123 with --team), or any reference task create --from takes
(an issue's URL, gh:owner/repo#12, gl:group/project#7, linear:ENG-123). Each task's
title, description and source come from its issue, as for task create --from. An issue
already imported is not imported again: the output names the task that has it. Exits 1
when an issue could not be read or made into a task.`,
		Example: `  kandev issues import 12 15
  kandev issues import ENG-123 --autopilot --start`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("issues import takes one or more ISSUE (a number, ENG-123, or an issue's URL)")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.Issues = args
			if err := createDefaults(f, &opts.Input); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return issuesImportRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Team, "team", "", "the Linear team bare numbers are issues of (ENG)")
	fl.StringVar(&opts.Input.Profile, "profile", "", "agent profile (default: as task create)")
	fl.BoolVar(&opts.Input.Autopilot, "autopilot", false, "run each on autopilot (fixed at creation)")
	fl.BoolVar(&opts.Input.Start, "start", false, "start each task's agent at once")
	fl.StringVar(&opts.Input.Assignee, "assignee", "", "a role or person (default: the profile's own role)")
	return c
}

// ImportResult is one issue's outcome: the task made, the task that had
// it already, or why not.
type ImportResult struct {
	Source string      `json:"source"`
	Issue  string      `json:"issue"`  // as given
	Status string      `json:"status"` // created, already_imported, failed
	Task   *core.Task  `json:"task,omitempty"`
	TaskID string      `json:"task_id,omitempty"`
	Error  *core.Error `json:"error,omitempty"`
}

// importRef reads one ISSUE argument against the project.
func (opts *IssuesImportOptions) importRef(ctx context.Context, arg string, project func() (tracker.Project, error)) (tracker.Ref, error) {
	if r, err := tracker.Parse(arg); err == nil {
		return r, nil
	}
	bare := strings.TrimPrefix(arg, "#")
	if strings.Contains(bare, "-") { // ENG-123
		return tracker.Parse("linear:" + bare)
	}
	p, err := project()
	if err != nil {
		return tracker.Ref{}, err
	}
	switch p.Kind {
	case tracker.Linear:
		return tracker.Parse("linear:" + p.Team + "-" + bare)
	case tracker.GitLab:
		if p.Host != "" {
			return tracker.Parse("gl@" + p.Host + ":" + p.Repo + "#" + bare)
		}
		return tracker.Parse("gl:" + p.Repo + "#" + bare)
	}
	return tracker.Parse("gh:" + p.Repo + "#" + bare)
}

func issuesImportRun(ctx context.Context, opts *IssuesImportOptions) error {
	f := opts.F
	var proj *tracker.Project
	project := func() (tracker.Project, error) {
		if proj == nil {
			p, err := opts.project(ctx)
			if err != nil {
				return tracker.Project{}, err
			}
			proj = &p
		}
		return *proj, nil
	}
	tc, err := f.trackerClient(opts.Dir)
	if err != nil {
		return err
	}
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	have, err := imported(ctx, client)
	if err != nil {
		return err
	}
	in := opts.Input
	if in.Profile == "" && in.ParentID == "" && in.Assignee == "" {
		profiles, err := client.ListProfiles(ctx)
		if err != nil {
			return err
		}
		in.Profile = core.PickDefaultProfile(profiles, f.Executable)
	}
	var results []ImportResult
	failed := 0
	for _, arg := range opts.Issues {
		res := importOne(ctx, opts, tc, client, in, arg, have, project)
		if res.Status == "failed" {
			failed++
		}
		results = append(results, res)
		if !f.JSON {
			printImport(f, res)
		}
	}
	if f.JSON {
		if err := f.printJSON(results); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d issues not imported", failed, len(opts.Issues))
	}
	return nil
}

// importOne imports one issue, or says which task has it, or why not.
func importOne(ctx context.Context, opts *IssuesImportOptions, tc *tracker.Client, client api.Client, in api.CreateTaskInput,
	arg string, have map[string]string, project func() (tracker.Project, error)) ImportResult {
	res := ImportResult{Issue: arg}
	fail := func(err error) ImportResult {
		res.Status, res.Error = "failed", core.AsError(trackerErr(err))
		return res
	}
	r, err := opts.importRef(ctx, arg, project)
	if err != nil {
		return fail(err)
	}
	res.Source = r.String()
	if id := have[res.Source]; id != "" {
		res.Status, res.TaskID = "already_imported", id
		return res
	}
	is, err := tc.Issue(ctx, r)
	if err != nil {
		return fail(err)
	}
	in = fromIssue(in, is)
	in.IdempotencyKey = "cli-" + core.NewID() + core.NewID() + core.NewID()
	t, err := client.CreateTask(ctx, in)
	if core.CodeOf(err) == core.CodeUnavailable && ctx.Err() == nil {
		t, err = client.CreateTask(ctx, in)
	}
	if id := conflictTask(err); id != "" {
		res.Status, res.TaskID = "already_imported", id
		return res
	}
	if err != nil {
		return fail(err)
	}
	have[res.Source] = t.ID
	res.Status, res.Task, res.TaskID = "created", &t, t.ID
	return res
}

// conflictTask is the task a refused create names as having the issue.
func conflictTask(err error) string {
	if core.CodeOf(err) != core.CodeConflict {
		return ""
	}
	switch d := core.AsError(err).Details.(type) {
	case map[string]any: // as the daemon's JSON decodes
		id, _ := d["task_id"].(string)
		return id
	case map[string]string:
		return d["task_id"]
	}
	return ""
}

func printImport(f *Factory, r ImportResult) {
	switch r.Status {
	case "created":
		fmt.Fprintln(f.IO.Out, r.TaskID)
		fmt.Fprintf(f.IO.ErrOut, "Created task %s from %s: %s\n", r.TaskID, r.Source, r.Task.Title)
	case "already_imported":
		fmt.Fprintf(f.IO.ErrOut, "Already imported: %s is task %s\n", r.Source, r.TaskID)
	default:
		what := r.Source
		if what == "" {
			what = r.Issue
		}
		fmt.Fprintf(f.IO.ErrOut, "Not imported: %s: %s\n", what, r.Error.Message)
	}
}
