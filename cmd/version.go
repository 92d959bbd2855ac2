package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/store"
)

// VersionOptions are `version`'s inputs.
type VersionOptions struct {
	F *Factory
}

// NewCmdVersion builds `kandev version`.
func NewCmdVersion(f *Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{F: f}
	return &cobra.Command{
		Use:   "version",
		Short: "Print kandev's version",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return versionRun(c.Context(), opts)
		},
	}
}

func versionRun(_ context.Context, opts *VersionOptions) error {
	f := opts.F
	v := api.VersionInfo{Version: Version, SchemaVersion: schemaVersion()}
	if f.JSON {
		return f.printJSON(v)
	}
	fmt.Fprintf(f.IO.Out, "kandev %s (schema %d)\n", v.Version, v.SchemaVersion)
	return nil
}

func schemaVersion() int { return store.SchemaVersion() }
