package cmd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// NewCmdProfile groups the profile verbs.
func NewCmdProfile(f *Factory) *cobra.Command {
	c := group("profile", "Manage agent profiles", "")
	c.AddCommand(NewCmdProfileAdd(f, nil), NewCmdProfileList(f, nil), NewCmdProfileShow(f, nil), NewCmdProfileRemove(f, nil))
	return c
}

// ProfileAddOptions are `profile add`'s inputs.
type ProfileAddOptions struct {
	F       *Factory
	Profile core.Profile
}

// NewCmdProfileAdd builds `kandev profile add`.
func NewCmdProfileAdd(f *Factory, runF func(*ProfileAddOptions) error) *cobra.Command {
	opts := &ProfileAddOptions{F: f}
	p := &opts.Profile
	var noMCP bool
	var servers, serverEnv []string
	c := &cobra.Command{
		Use:   "add NAME --command CMD [--arg A]... [--env K=V]... [--no-mcp] [--start-timeout D] [--permission P] [--autopilot-permission P] [--sandbox MODE] [--image IMAGE] [--path P]... [--no-network] [--network MODE] [--forward PORT]... [--host NAME|auto|local] [--mcp-server 'NAME=CMD ARG...']... [--mcp-server-env NAME:K=V]...",
		Short: "Add (or replace) an agent profile",
		Long: `Add (or replace) an agent profile.

--permission sets how kandev answers the agent's permission requests on a normal
task: allow, deny, or ask (a pending question for you, answered with kandev task
answer ID --option N). --autopilot-permission sets it for autopilot tasks, where
nobody is asked: allow or deny. Unset, they follow $KANDEV_PERMISSION and
$KANDEV_AUTOPILOT_PERMISSION, else config.toml, else ask and allow.

--sandbox sets where a new task of the profile runs when its create names none:
none, bwrap, docker or podman (docs/sandbox.md); --image is the container image of
docker and podman; --path a file or directory a confined agent may reach besides its
worktree (~/ is your home; ro: in front for read-only); --no-network cuts a confined
agent off the network. --network sets it: none, default (bwrap shares this machine's;
a container gets its engine's default) or host (a container on this machine's
network). --forward PORT lets a confined agent reach this machine's 127.0.0.1:PORT
(a local model server, a proxy) at its own 127.0.0.1:PORT, whatever its network,
and nothing else of the host's network.

--host sets where a new top-level task of the profile runs when its create names
none: a host (kandev host list), auto (any host with a free slot) or local (this
machine); unset, the config's host. A subtask runs where its parent does.

--mcp-server 'NAME=COMMAND ARG...' gives the agent a stdio MCP server of its own (a
browser, a database), passed in session/new after kandev's own: the agent starts
it, so it runs where the agent does, inside its sandbox, with the agent's view of
the files (docs/sandbox.md). The command and arguments split at spaces. NAME is
1-32 lowercase letters, digits, '_' or '-', unique in the profile, never "kandev";
the profile must take MCP servers (no --no-mcp). --mcp-server-env NAME:KEY=VALUE
adds an environment entry to server NAME.`,
		Example: `  kandev profile add claude-opus --command claude-agent-acp --env ANTHROPIC_MODEL=opus
  kandev profile add plain --command my-agent --no-mcp
  kandev profile add opencode --command opencode --arg acp --start-timeout 3m
  kandev profile add careful --command codex-acp --permission ask --autopilot-permission deny
  kandev profile add boxed --command claude-agent-acp --sandbox docker --image kandev-claude --path ~/.claude --path ~/.claude.json
  kandev profile add local-model --command opencode --arg acp --sandbox docker --image kandev-opencode --network none --forward 11434
  kandev profile add web --command claude-agent-acp --sandbox bwrap --mcp-server 'browser=mcp-server-playwright --headless'
  kandev profile add db --command codex-acp --mcp-server 'pg=postgres-mcp' --mcp-server-env pg:DATABASE_URL=postgres:///app`,
		Args: exactArgs(1, "the profile NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			p.Name = args[0]
			p.MCP = !noMCP
			if strings.TrimSpace(p.Command) == "" {
				return usagef("--command is required")
			}
			switch p.Network {
			case "default":
				p.Network = ""
			case "", "none", "host":
			default:
				return usagef("--network %q: want none, default or host", p.Network)
			}
			var err error
			if p.MCPServers, err = parseMCPServerFlags(servers, serverEnv); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return profileAddRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&p.Command, "command", "", "the ACP agent executable")
	c.Flags().StringArrayVar(&p.Args, "arg", nil, "an argument (repeat)")
	c.Flags().StringArrayVar(&p.Env, "env", nil, "an environment entry KEY=VALUE (repeat)")
	c.Flags().BoolVar(&noMCP, "no-mcp", false, "the agent cannot take an injected MCP server (no autopilot)")
	c.Flags().StringVar(&p.StartTimeout, "start-timeout", "", "how long the agent may take to start (e.g. 3m); default: the daemon's (60s)")
	c.Flags().StringVar(&p.Permission, "permission", "", "answer to the agent's permission requests on a normal task: allow, deny or ask; default: the config's (ask)")
	c.Flags().StringVar(&p.AutopilotPermission, "autopilot-permission", "", "answer to them on an autopilot task: allow or deny; default: the config's (allow)")
	c.Flags().StringVar(&p.Sandbox, "sandbox", "", "where its new tasks run: none, bwrap, docker or podman; default: the config's sandbox or autopilot_sandbox")
	c.Flags().StringVar(&p.Image, "image", "", "the container image of docker and podman")
	c.Flags().StringArrayVar(&p.Paths, "path", nil, "a path a confined agent may reach: ~/.x or /abs, ro:PATH for read-only (repeat)")
	c.Flags().BoolVar(&p.NoNetwork, "no-network", false, "a confined agent of this profile has no network")
	c.Flags().StringVar(&p.Network, "network", "", "a confined agent's network: none, default or host")
	c.Flags().IntSliceVar(&p.Forwards, "forward", nil, "a port of this machine's 127.0.0.1 a confined agent reaches at its own (repeat)")
	c.Flags().StringVar(&p.Host, "host", "", "where its new top-level tasks run: a host, auto or local; default: the config's host")
	c.Flags().StringArrayVar(&servers, "mcp-server", nil, "an MCP server of the agent's own, NAME=COMMAND ARG..., run inside its sandbox (repeat)")
	c.Flags().StringArrayVar(&serverEnv, "mcp-server-env", nil, "an environment entry of one of its MCP servers, NAME:KEY=VALUE (repeat)")
	_ = c.RegisterFlagCompletionFunc("sandbox", cobra.FixedCompletions(core.SandboxModes(), cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("network", cobra.FixedCompletions([]string{"none", "default", "host"}, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("permission", cobra.FixedCompletions([]string{"allow", "deny", "ask"}, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("autopilot-permission", cobra.FixedCompletions([]string{"allow", "deny"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// parseMCPServerFlags reads --mcp-server and --mcp-server-env; the names
// and commands are the daemon's to check (core.ValidateProfile).
func parseMCPServerFlags(servers, env []string) ([]core.MCPServer, error) {
	var out []core.MCPServer
	for _, v := range servers {
		s, err := core.ParseMCPServer(v)
		if err != nil {
			return nil, usagef("%s", err.Error())
		}
		out = append(out, s)
	}
	for _, v := range env {
		name, kv, err := core.ParseMCPServerEnv(v)
		if err != nil {
			return nil, usagef("%s", err.Error())
		}
		i := slices.IndexFunc(out, func(s core.MCPServer) bool { return s.Name == name })
		if i < 0 {
			return nil, usagef("--mcp-server-env %q: no --mcp-server named %s", v, name)
		}
		out[i].Env = append(out[i].Env, kv)
	}
	return out, nil
}

func profileAddRun(ctx context.Context, opts *ProfileAddOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	saved, err := client.AddProfile(ctx, opts.Profile)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(saved)
	}
	fmt.Fprintf(f.IO.ErrOut, "Saved profile %s (%s)\n", saved.Name, saved.Source)
	return nil
}

// ProfileListOptions are `profile list`'s inputs.
type ProfileListOptions struct {
	F *Factory
}

// NewCmdProfileList builds `kandev profile list`.
func NewCmdProfileList(f *Factory, runF func(*ProfileListOptions) error) *cobra.Command {
	opts := &ProfileListOptions{F: f}
	return &cobra.Command{
		Use:   "list",
		Short: "List profiles",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return profileListRun(c.Context(), opts)
		},
	}
}

func profileListRun(ctx context.Context, opts *ProfileListOptions) error {
	f := opts.F
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	ps, err := client.ListProfiles(ctx)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(ps)
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tMCP\tSOURCE\tCOMMAND")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\n", p.Name, p.MCP, p.Source, p.CommandLine())
	}
	return tw.Flush()
}

// ProfileShowOptions are `profile show`'s inputs.
type ProfileShowOptions struct {
	F      *Factory
	Name   string
	Reveal bool
}

// NewCmdProfileShow builds `kandev profile show`.
func NewCmdProfileShow(f *Factory, runF func(*ProfileShowOptions) error) *cobra.Command {
	opts := &ProfileShowOptions{F: f}
	c := &cobra.Command{
		Use:   "show NAME [--reveal]",
		Short: "Show one profile (secret-looking env values masked)",
		Long: `Show one profile. The values of env entries whose names look secret (containing KEY,
TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL, AUTH or PRIVATE, in any case) print as
**** (with their last 4 characters when long), in --json too, unless --reveal.`,
		Args: exactArgs(1, "the profile NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return profileShowRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Reveal, "reveal", false, "print secret-looking env values in clear")
	return c
}

func profileShowRun(ctx context.Context, opts *ProfileShowOptions) error {
	f := opts.F
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	p, err := client.GetProfile(ctx, opts.Name)
	if err != nil {
		return err
	}
	if !opts.Reveal {
		p.Env = maskEnv(p.Env)
		for i := range p.MCPServers {
			p.MCPServers[i].Env = maskEnv(p.MCPServers[i].Env)
		}
	}
	if f.JSON {
		return f.printJSON(p)
	}
	fmt.Fprintf(f.IO.Out, "name:     %s\nsource:   %s\ncommand:  %s\nmcp:      %v\n", p.Name, p.Source, p.CommandLine(), p.MCP)
	for _, e := range p.Env {
		fmt.Fprintf(f.IO.Out, "env:      %s\n", e)
	}
	if p.StartTimeout != "" {
		fmt.Fprintf(f.IO.Out, "start:    %s\n", p.StartTimeout)
	}
	if p.Permission != "" {
		fmt.Fprintf(f.IO.Out, "permission: %s\n", p.Permission)
	}
	if p.AutopilotPermission != "" {
		fmt.Fprintf(f.IO.Out, "autopilot permission: %s\n", p.AutopilotPermission)
	}
	if p.Sandbox != "" {
		fmt.Fprintf(f.IO.Out, "sandbox:  %s\n", p.Sandbox)
	}
	if p.Image != "" {
		fmt.Fprintf(f.IO.Out, "image:    %s\n", p.Image)
	}
	for _, path := range p.Paths {
		fmt.Fprintf(f.IO.Out, "path:     %s\n", path)
	}
	switch {
	case p.NoNetwork || p.Network == "none":
		fmt.Fprintf(f.IO.Out, "network:  off\n")
	case p.Network == "host":
		fmt.Fprintf(f.IO.Out, "network:  the host's\n")
	}
	for _, port := range p.Forwards {
		fmt.Fprintf(f.IO.Out, "forward:  127.0.0.1:%d (this machine's, inside at the same port)\n", port)
	}
	if p.Host != "" {
		fmt.Fprintf(f.IO.Out, "host:     %s\n", p.Host)
	}
	for _, s := range p.MCPServers {
		fmt.Fprintf(f.IO.Out, "mcp server: %s\n", mcpServerLine(s))
	}
	return nil
}

// mcpServerLine renders one of a profile's MCP servers: its name, command
// line and env entries (as given; mask them first).
func mcpServerLine(s core.MCPServer) string {
	line := s.Name + " = " + strings.Join(append([]string{s.Command}, s.Args...), " ")
	if len(s.Env) > 0 {
		line += " (env " + strings.Join(s.Env, " ") + ")"
	}
	return line
}

// secretWords mark an env name whose value should not reach a screen or a
// pasted bug report. Masking a harmless value by mistake costs a --reveal;
// missing a key costs the key.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "PRIVATE"}

// maskEnv returns env with the values of secret-looking names masked: ****,
// and the last 4 characters of a value long enough that they give nothing
// useful away (they tell two keys apart).
func maskEnv(env []string) []string {
	if env == nil {
		return nil
	}
	out := make([]string, len(env))
	for i, e := range env {
		out[i] = e
		name, val, ok := strings.Cut(e, "=")
		if !ok || val == "" || !secretName(name) {
			continue
		}
		masked := "****"
		if r := []rune(val); len(r) >= 16 {
			masked += string(r[len(r)-4:])
		}
		out[i] = name + "=" + masked
	}
	return out
}

func secretName(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// ProfileRemoveOptions are `profile remove`'s inputs.
type ProfileRemoveOptions struct {
	F    *Factory
	Name string
}

// NewCmdProfileRemove builds `kandev profile remove`.
func NewCmdProfileRemove(f *Factory, runF func(*ProfileRemoveOptions) error) *cobra.Command {
	opts := &ProfileRemoveOptions{F: f}
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a user profile (an override's built-in comes back)",
		Args:  exactArgs(1, "the profile NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return profileRemoveRun(c.Context(), opts)
		},
	}
}

func profileRemoveRun(ctx context.Context, opts *ProfileRemoveOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	p, err := client.RemoveProfile(ctx, opts.Name, api.RemoveProfileInput{})
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(p)
	}
	fmt.Fprintf(f.IO.ErrOut, "Removed profile %s\n", p.Name)
	return nil
}
