package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/mcpserve"
)

// mcpExample is the external-surface configuration for the agent CLIs
// people run by hand (docs/mcp.md has the full reference).
const mcpExample = `  # Claude Code
  claude mcp add --scope user kandev -- kandev mcp

  # Codex (~/.codex/config.toml)
  [mcp_servers.kandev]
  command = "kandev"
  args = ["mcp"]

  # Gemini CLI (~/.gemini/settings.json)
  { "mcpServers": { "kandev": { "command": "kandev", "args": ["mcp"] } } }`

// MCPOptions are `mcp`'s inputs.
type MCPOptions struct {
	F *Factory
}

// NewCmdMCP builds `kandev mcp`.
func NewCmdMCP(f *Factory, runF func(*MCPOptions) error) *cobra.Command {
	opts := &MCPOptions{F: f}
	return &cobra.Command{
		Use:         "mcp",
		Annotations: map[string]string{rawStreams: "1"},
		Short:       "Serve kandev's MCP tools on stdio (run by agent CLIs)",
		Long: `kandev mcp is an MCP server on stdin/stdout. Agent CLIs start it; people don't,
except to give an agent CLI they run by hand kandev's external tools.

kandev starts it for every agent it runs, with KANDEV_SOCKET and a per-session
KANDEV_TOKEN in its environment: the agent then sees exactly the tools of its
task (create and list subtasks, message them, ask a question, ...). A token
the daemon does not know, or one whose session has ended, is refused at start.

Without KANDEV_TOKEN it serves the external surface (create, list and read
tasks) of the kandev home ($KANDEV_HOME, else $XDG_DATA_HOME/kandev, else
~/.local/share/kandev, or --home), starting the daemon if none is running.

Stdout carries JSON-RPC only. Set KANDEV_MCP_DEBUG=1 for diagnostics on stderr.
The tools, their schemas and errors are in docs/mcp.md.`,
		Example: mcpExample,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return mcpRun(c.Context(), opts)
		},
	}
}

func mcpRun(ctx context.Context, opts *MCPOptions) error {
	f := opts.F
	return mcpserve.Run(ctx, f.IO.In, f.IO.Out, f.Getenv,
		mcpserve.WithHome(f.Home),
		mcpserve.WithExecutable(f.Executable),
		mcpserve.WithStderr(f.IO.ErrOut),
		mcpserve.WithVersion(Version))
}
