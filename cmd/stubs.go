package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/store"
)

func schemaVersion() int { return store.SchemaVersion() }

// NewCmdMCP builds `kandev mcp`.
func NewCmdMCP(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve kandev's MCP tools on stdio (run by agent CLIs)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return fmt.Errorf("not built yet")
		},
	}
}

// NewCmdDemo builds `kandev demo`.
func NewCmdDemo(f *Factory, runF func(*Factory) error) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run a canned scenario with the mock agent in a temporary home",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return fmt.Errorf("not built yet")
		},
	}
}

func runTUI(ctx context.Context, f *Factory) error {
	return fmt.Errorf("the TUI is not built yet")
}
