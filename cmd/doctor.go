package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/config"
	"github.com/kandev/kandev/core/doctor"
)

// DoctorOptions are `doctor`'s inputs.
type DoctorOptions struct {
	F       *Factory
	Timeout time.Duration
}

// NewCmdDoctor diagnoses the setup.
func NewCmdDoctor(f *Factory, runF func(*DoctorOptions) error) *cobra.Command {
	opts := &DoctorOptions{F: f}
	c := &cobra.Command{
		Use:   "doctor [--timeout D]",
		Short: "Check which agent profiles can run, the daemon, the database and git",
		Long: `Check the setup without changing it: for each profile, whether its command is on PATH
(and where), its version, whether it answers ACP initialize within --timeout (the agent is
started in its own process group, asked, and stopped; no session, no model call), and which
of the credentials variables it reads are set (names only); then the daemon (never
started), the home, the socket, the database's integrity (read-only) and git; then the
sandboxes this machine has and, for each profile with one, whether its agent answers
initialize from inside it (the first line of its stderr that says why, when it does not).
Exits 1 when the default profile cannot run.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return doctorRun(c.Context(), opts)
		},
	}
	c.Flags().DurationVar(&opts.Timeout, "timeout", doctor.DefaultTimeout, "how long each agent has to answer ACP initialize")
	return c
}

func doctorRun(ctx context.Context, opts *DoctorOptions) error {
	f := opts.F
	home, err := f.ResolveHome()
	if err != nil {
		return err
	}
	o := doctor.Options{Home: home, SelfExe: f.Executable, Getenv: f.Getenv, Timeout: opts.Timeout}
	cfg, err := config.Load(f.Getenv)
	if err != nil {
		return err
	}
	v, err := cfg.Get("profile")
	if err != nil {
		return err
	}
	if v.Value != "" {
		o.DefaultProfile, o.DefaultSource = v.Value, string(v.Source)
	}
	if v, err := cfg.Get("mcp_servers"); err == nil && v.Value != "" {
		if o.MCPServers, err = core.ParseMCPServerList(v.Value); err != nil {
			return err
		}
	}
	r, err := doctor.Run(ctx, o)
	if err != nil {
		return err
	}
	if f.JSON {
		err = f.printJSON(r)
	} else {
		err = printDoctor(f, r)
	}
	if err != nil {
		return err
	}
	if !r.DefaultUsable {
		return fmt.Errorf("the default profile %s cannot run (see above)", r.DefaultProfile)
	}
	return nil
}

func printDoctor(f *Factory, r doctor.Report) error {
	out := f.IO.Out
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tSOURCE\tCOMMAND\tSTATUS\tVERSION\tCREDENTIALS SET")
	for _, p := range r.Profiles {
		name := p.Name
		if p.Default {
			name += " *"
		}
		status := "usable"
		switch {
		case !p.Found:
			status = "not found"
		case !p.Usable:
			status = "no ACP answer"
		}
		creds := "-"
		if len(p.Credentials) > 0 {
			creds = strings.Join(p.Credentials, ",")
		}
		ver := p.Version
		if ver == "" {
			ver = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, p.Source, p.Command, status, ver, creds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range r.Profiles {
		switch {
		case p.Usable:
			continue
		case !p.Found && p.Install != "":
			fmt.Fprintf(out, "  %s: not on PATH; install: %s\n", p.Name, p.Install)
		case !p.Found:
			fmt.Fprintf(out, "  %s: %s\n", p.Name, p.ACPError)
		default:
			fmt.Fprintf(out, "  %s: %s: %s\n", p.Name, p.Path, p.ACPError)
		}
	}
	for _, p := range r.Profiles {
		for _, s := range p.MCPServers {
			if s.Found {
				fmt.Fprintf(out, "profile %s: MCP server %s: %s (%s; started by the agent, inside its sandbox)\n", p.Name, s.Name, s.Command, s.Path)
			} else {
				fmt.Fprintf(out, "profile %s: MCP server %s: %s: %s\n", p.Name, s.Name, s.Command, s.Error)
			}
		}
	}
	var reports, silent []string
	for _, p := range r.Profiles {
		if p.Usage != "" {
			reports = append(reports, p.Name+" ("+p.Usage+")")
		} else {
			silent = append(silent, p.Name)
		}
	}
	spend := "spend:    reported by " + orNothing(strings.Join(reports, ", "))
	if len(silent) > 0 {
		spend += "; nothing known from " + strings.Join(silent, ", ")
	}
	fmt.Fprintln(out, spend+" (docs/usage.md)")
	why := map[string]string{"env": "$KANDEV_PROFILE", "file": "config.toml", "picked": "first built-in agent on PATH, else mock"}[r.DefaultSource]
	usable := "usable"
	if !r.DefaultUsable {
		usable = "CANNOT RUN"
	}
	fmt.Fprintf(out, "default:  %s (%s), %s\n", r.DefaultProfile, why, usable)
	switch {
	case !r.Daemon.Running:
		fmt.Fprintln(out, "daemon:   not running")
	case !r.Daemon.Answering:
		fmt.Fprintf(out, "daemon:   running, not answering yet (pid %d)\n", r.Daemon.PID)
	default:
		fmt.Fprintf(out, "daemon:   running (pid %d, %s)\n", r.Daemon.PID, r.Daemon.Version)
	}
	fmt.Fprintf(out, "home:     %s\nsocket:   %s\n", r.Home, r.Socket)
	db := r.Database
	switch {
	case !db.Exists:
		fmt.Fprintf(out, "database: %s (not created yet)\n", db.Path)
	case db.Error != "":
		fmt.Fprintf(out, "database: %s: %s\n", db.Path, db.Error)
	case db.OK:
		fmt.Fprintf(out, "database: %s: integrity ok (checked by the %s)\n", db.Path, map[string]string{"daemon": "daemon", "file": "file, read-only"}[db.Via])
	default:
		fmt.Fprintf(out, "database: %s: INTEGRITY PROBLEMS: %s\n", db.Path, strings.Join(db.Integrity, "; "))
	}
	if r.Git.Found {
		fmt.Fprintf(out, "git:      %s (%s)\n", r.Git.Path, r.Git.Version)
	} else {
		fmt.Fprintln(out, "git:      not found on PATH")
	}
	printSandboxes(out, r)
	return nil
}

// printSandboxes is doctor's sandbox section: each mode, then each profile
// whose own sandbox is set (docs/sandbox.md).
func printSandboxes(out io.Writer, r doctor.Report) {
	for _, s := range r.Sandboxes {
		switch {
		case s.Works:
			fmt.Fprintf(out, "sandbox %s: %s (%s)\n", s.Mode, s.Path, s.Version)
		case s.Found:
			fmt.Fprintf(out, "sandbox %s: %s cannot run: %s\n", s.Mode, s.Path, s.Error)
		default:
			fmt.Fprintf(out, "sandbox %s: not installed (%s)\n", s.Mode, s.Hint)
		}
	}
	for _, p := range r.ProfileSandboxes {
		switch {
		case p.CanStart && p.Agent != nil && p.Agent.AgentName != "":
			fmt.Fprintf(out, "profile %s: the agent starts inside %s (%s %s answered initialize)\n", p.Profile, p.Mode, p.Agent.AgentName, p.Agent.AgentVersion)
		case p.CanStart:
			fmt.Fprintf(out, "profile %s: the agent starts inside %s (it answered initialize)\n", p.Profile, p.Mode)
		default:
			fmt.Fprintf(out, "profile %s: sandbox %s CANNOT START: %s\n", p.Profile, p.Mode, p.Why)
		}
	}
}
