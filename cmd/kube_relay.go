package cmd

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core/kube/relay"
)

// KubeRelayOptions are `kube-relay`'s inputs.
type KubeRelayOptions struct {
	F    *Factory
	Mode string
	Args []string
}

// NewCmdKubeRelay builds the hidden `kandev kube-relay`, run inside a
// session's pod (docs/kubernetes.md): `serve MCP-SOCKET CONTROL-SOCKET`
// listens where the agent's `kandev mcp` dials and pairs each connection
// with a spare; `spare CONTROL-SOCKET` is the pod's end of a spare exec
// stream the daemon keeps open, carrying one connection to the daemon.
func NewCmdKubeRelay(f *Factory, runF func(*KubeRelayOptions) error) *cobra.Command {
	opts := &KubeRelayOptions{F: f}
	c := &cobra.Command{
		Use:         "kube-relay serve MCP-SOCKET CONTROL-SOCKET | spare CONTROL-SOCKET",
		Short:       "Carry a pod's MCP connections to the daemon over exec streams",
		Hidden:      true,
		Annotations: map[string]string{rawStreams: "1"},
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) == 3 && args[0] == "serve", len(args) == 2 && args[0] == "spare":
				return nil
			}
			return usagef("want serve MCP-SOCKET CONTROL-SOCKET, or spare CONTROL-SOCKET")
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.Mode, opts.Args = args[0], args[1:]
			if runF != nil {
				return runF(opts)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if opts.Mode == "serve" {
				return relay.Serve(ctx, opts.Args[0], opts.Args[1])
			}
			return relay.Spare(ctx, opts.Args[0], os.Stdin, os.Stdout)
		},
	}
	return c
}
