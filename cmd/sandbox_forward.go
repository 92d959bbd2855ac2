package cmd

import (
	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core/sandbox"
)

// SandboxForwardOptions are `sandbox-forward`'s inputs.
type SandboxForwardOptions struct {
	F       *Factory
	Ports   []string
	Signals bool
	Command []string
}

// NewCmdSandboxForward builds the hidden `kandev sandbox-forward`: run
// inside a sandbox around a confined agent whose profile forwards host
// loopback ports (docs/sandbox.md, Network), it serves them and runs the
// agent, exiting as the agent does.
func NewCmdSandboxForward(f *Factory, runF func(*SandboxForwardOptions) error) *cobra.Command {
	opts := &SandboxForwardOptions{F: f}
	c := &cobra.Command{
		Use:         "sandbox-forward --port PORT=SOCKET... [--signals] -- CMD [ARG]...",
		Short:       "Serve forwarded ports inside a sandbox around the agent's command",
		Hidden:      true,
		Annotations: map[string]string{rawStreams: "1"},
		Args:        cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if c.ArgsLenAtDash() != 0 {
				return usagef("the agent's command goes after --")
			}
			opts.Command = args
			if runF != nil {
				return runF(opts)
			}
			if code := sandbox.ServeInside(opts.Ports, opts.Signals, opts.Command); code != 0 {
				return &ShellExit{Code: code}
			}
			return nil
		},
	}
	c.Flags().StringArrayVar(&opts.Ports, "port", nil, "PORT=SOCKET: 127.0.0.1:PORT inside reaches the host's through SOCKET (repeat)")
	c.Flags().BoolVar(&opts.Signals, "signals", false, "pass SIGINT, SIGTERM and SIGHUP on to the command (a container's first process)")
	return c
}
