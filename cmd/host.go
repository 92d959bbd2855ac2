package cmd

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// NewCmdHost groups the host verbs.
func NewCmdHost(f *Factory) *cobra.Command {
	c := group("host", "Manage hosts: other machines agents run on, over ssh",
		`A host is another machine reached with the system ssh: your ssh_config, keys, agent and
known_hosts apply, and host keys are always verified. kandev keeps one shared connection
per host (its control socket under the kandev home) and its own directory there
(--dir, default ~/.kandev). A task is placed on a host when it is created
(kandev task create --host NAME); its subtasks inherit that host. See docs/hosts.md.`)
	c.AddCommand(NewCmdHostAdd(f, nil), NewCmdHostList(f, nil), NewCmdHostShow(f, nil),
		NewCmdHostCheck(f, nil), NewCmdHostEdit(f, nil), NewCmdHostRemove(f, nil))
	return c
}

// hostClient is the daemon's host surface; a command that only reads
// (list, show, check) never starts the daemon.
func hostClient(ctx context.Context, f *Factory, read bool) (api.HostClient, error) {
	connect := f.Client
	if read {
		connect = f.ReadClient
	}
	client, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	hc, ok := client.(api.HostClient)
	if !ok {
		return nil, core.Errorf(core.CodeUnavailable, "this daemon does not manage hosts")
	}
	return hc, nil
}

// HostAddOptions are `host add`'s inputs.
type HostAddOptions struct {
	F     *Factory
	Input api.HostInput
}

// NewCmdHostAdd builds `kandev host add`.
func NewCmdHostAdd(f *Factory, runF func(*HostAddOptions) error) *cobra.Command {
	opts := &HostAddOptions{F: f}
	c := &cobra.Command{
		Use:   "add NAME --ssh [USER@]HOST[:PORT] [--identity FILE] [--dir PATH] [--max-agents N]",
		Short: "Add a host",
		Example: "  kandev host add build1 --ssh dev@build1.internal --max-agents 4\n" +
			"  kandev host add gpu --ssh gpu-box --identity ~/.ssh/id_gpu --dir /scratch/kandev",
		Args: exactArgs(1, "the host NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Input.Name = args[0]
			if opts.Input.SSH == "" {
				return usagef("--ssh is required")
			}
			if opts.Input.Identity != "" {
				// The daemon runs elsewhere: it needs the file's full path.
				abs, err := filepath.Abs(opts.Input.Identity)
				if err != nil {
					return usagef("--identity: %v", err)
				}
				opts.Input.Identity = abs
			}
			if runF != nil {
				return runF(opts)
			}
			return hostAddRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Input.SSH, "ssh", "", "where: [USER@]HOST[:PORT] or a Host of your ssh_config")
	c.Flags().StringVar(&opts.Input.Identity, "identity", "", "private key file (default: ssh's own choice)")
	c.Flags().StringVar(&opts.Input.Dir, "dir", "", "kandev's directory on the host (default ~/.kandev)")
	c.Flags().IntVar(&opts.Input.MaxAgents, "max-agents", 0, "most agents running there at once (0: no bound)")
	return c
}

func hostAddRun(ctx context.Context, opts *HostAddOptions) error {
	f := opts.F
	hc, err := hostClient(ctx, f, false)
	if err != nil {
		return err
	}
	h, err := hc.AddHost(ctx, opts.Input)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(h)
	}
	fmt.Fprintf(f.IO.ErrOut, "Added host %s (ssh %s); kandev host check %s connects to it\n", h.Name, h.SSH, h.Name)
	return nil
}

// HostListOptions are `host list`'s inputs.
type HostListOptions struct{ F *Factory }

// NewCmdHostList builds `kandev host list`.
func NewCmdHostList(f *Factory, runF func(*HostListOptions) error) *cobra.Command {
	opts := &HostListOptions{F: f}
	return &cobra.Command{
		Use:   "list",
		Short: "List hosts",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return hostListRun(c.Context(), opts)
		},
	}
}

func hostListRun(ctx context.Context, opts *HostListOptions) error {
	f := opts.F
	hc, err := hostClient(ctx, f, true)
	if err != nil {
		return err
	}
	hs, err := hc.ListHosts(ctx)
	if err != nil {
		return err
	}
	if f.JSON {
		if hs == nil {
			hs = []core.Host{}
		}
		return f.printJSON(hs)
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSSH\tDIR\tMAX AGENTS\tTASKS")
	for _, h := range hs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", h.Name, h.SSH, hostDir(h.Dir), maxAgents(h.MaxAgents), h.Tasks)
	}
	return tw.Flush()
}

func hostDir(d string) string {
	if d == "" {
		return "~/.kandev"
	}
	return d
}

func maxAgents(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// HostShowOptions are `host show`'s inputs.
type HostShowOptions struct {
	F    *Factory
	Name string
}

// NewCmdHostShow builds `kandev host show`.
func NewCmdHostShow(f *Factory, runF func(*HostShowOptions) error) *cobra.Command {
	opts := &HostShowOptions{F: f}
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a host",
		Args:  exactArgs(1, "the host NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return hostShowRun(c.Context(), opts)
		},
	}
}

func hostShowRun(ctx context.Context, opts *HostShowOptions) error {
	f := opts.F
	hc, err := hostClient(ctx, f, true)
	if err != nil {
		return err
	}
	h, err := hc.GetHost(ctx, opts.Name)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(h)
	}
	id := h.Identity
	if id == "" {
		id = "(ssh's choice)"
	}
	fmt.Fprintf(f.IO.Out, "name:        %s\nssh:         %s\nidentity:    %s\ndir:         %s\nmax agents:  %s\ntasks:       %d\n",
		h.Name, h.SSH, id, hostDir(h.Dir), maxAgents(h.MaxAgents), h.Tasks)
	return nil
}

// HostCheckOptions are `host check`'s inputs.
type HostCheckOptions struct {
	F    *Factory
	Name string
}

// NewCmdHostCheck builds `kandev host check`.
func NewCmdHostCheck(f *Factory, runF func(*HostCheckOptions) error) *cobra.Command {
	opts := &HostCheckOptions{F: f}
	return &cobra.Command{
		Use:   "check NAME",
		Short: "Connect to a host and report what it has",
		Long: `Connect to a host and report what it has: kandev's own binary there (its version, and
whether it is this one, by hash: it is copied when a task starts otherwise), git, the agent
CLI of each profile, bubblewrap, docker (and whether its daemon answers docker info) and
podman, and its free agent slots. Exits non-zero when the host cannot be reached, with ssh's
own error and, for a host key ssh does not know or that changed, how to check and add it.`,
		Args: exactArgs(1, "the host NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return hostCheckRun(c.Context(), opts)
		},
	}
}

func hostCheckRun(ctx context.Context, opts *HostCheckOptions) error {
	f := opts.F
	hc, err := hostClient(ctx, f, true)
	if err != nil {
		return err
	}
	r, err := hc.CheckHost(ctx, opts.Name)
	if err != nil {
		return err
	}
	if f.JSON {
		if err := f.printJSON(r); err != nil {
			return err
		}
	} else if r.Reachable {
		printHostCheck(f, r)
	}
	if !r.Reachable {
		return core.Errorf(core.CodeUnavailable, "%s", r.Error)
	}
	return nil
}

func printHostCheck(f *Factory, r api.HostCheck) {
	found := func(s string) string {
		if s == "" {
			return "missing"
		}
		return s
	}
	k := "missing (copied when a task starts)"
	if r.Kandev.Present {
		k = r.Kandev.Version
		if r.Kandev.Current {
			k += ", this binary"
		} else {
			k += ", another binary (replaced when a task starts)"
		}
	}
	docker := found(r.Docker)
	switch {
	case r.DockerDown != "":
		docker += " (its daemon does not answer: " + r.DockerDown + "; docker tasks cannot run there until it does)"
	case r.DockerServer != "":
		docker += " (daemon " + r.DockerServer + ")"
	}
	fmt.Fprintf(f.IO.Out, "host:    %s (reachable)\nkandev:  %s\n         %s\ngit:     %s\nbwrap:   %s\ndocker:  %s\npodman:  %s\n",
		r.Host, k, r.Kandev.Path, found(r.Git), found(r.Bwrap), docker, found(r.Podman))
	slots := "no bound"
	if r.FreeSlots >= 0 {
		slots = fmt.Sprintf("%d of %d free", r.FreeSlots, r.MaxAgents)
	}
	fmt.Fprintf(f.IO.Out, "slots:   %s (%d running)\n", slots, r.Running)
	if len(r.Agents) > 0 {
		var b strings.Builder
		for _, a := range r.Agents {
			fmt.Fprintf(&b, "  %s\t%s\t%s\n", a.Profile, a.Command, found(a.Path))
		}
		tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "agents:")
		fmt.Fprint(tw, b.String())
		_ = tw.Flush()
	}
}

// HostEditOptions are `host edit`'s inputs.
type HostEditOptions struct {
	F    *Factory
	Name string
	Edit api.HostEdit
}

// NewCmdHostEdit builds `kandev host edit`.
func NewCmdHostEdit(f *Factory, runF func(*HostEditOptions) error) *cobra.Command {
	opts := &HostEditOptions{F: f}
	var maxAgents int
	c := &cobra.Command{
		Use:   "edit NAME --max-agents N",
		Short: "Change a host's bound on agents (runs waiting for a slot take the new ones)",
		Args:  exactArgs(1, "the host NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if !c.Flags().Changed("max-agents") {
				return usagef("nothing to change: give --max-agents")
			}
			opts.Edit.MaxAgents = &maxAgents
			if runF != nil {
				return runF(opts)
			}
			return hostEditRun(c.Context(), opts)
		},
	}
	c.Flags().IntVar(&maxAgents, "max-agents", 0, "most agents running there at once (0: no bound)")
	return c
}

func hostEditRun(ctx context.Context, opts *HostEditOptions) error {
	f := opts.F
	hc, err := hostClient(ctx, f, false)
	if err != nil {
		return err
	}
	h, err := hc.EditHost(ctx, opts.Name, opts.Edit)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(h)
	}
	fmt.Fprintf(f.IO.ErrOut, "Host %s: at most %s\n", h.Name, agentsBound(h.MaxAgents))
	return nil
}

func agentsBound(n int) string {
	if n == 0 {
		return "any number of agents"
	}
	return fmt.Sprintf("%d agents", n)
}

// HostRemoveOptions are `host remove`'s inputs.
type HostRemoveOptions struct {
	F    *Factory
	Name string
}

// NewCmdHostRemove builds `kandev host remove`.
func NewCmdHostRemove(f *Factory, runF func(*HostRemoveOptions) error) *cobra.Command {
	opts := &HostRemoveOptions{F: f}
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a host (refused while tasks that are not archived are on it)",
		Args:  exactArgs(1, "the host NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return hostRemoveRun(c.Context(), opts)
		},
	}
}

func hostRemoveRun(ctx context.Context, opts *HostRemoveOptions) error {
	f := opts.F
	hc, err := hostClient(ctx, f, false)
	if err != nil {
		return err
	}
	h, err := hc.RemoveHost(ctx, opts.Name)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(h)
	}
	fmt.Fprintf(f.IO.ErrOut, "Removed host %s\n", h.Name)
	return nil
}
