package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agentimage"
)

// NewCmdImage is `kandev image`: container images for confined agents.
func NewCmdImage(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "image",
		Short: "Build container images for confined agents",
	}
	c.AddCommand(NewCmdImageBuild(f, nil))
	return c
}

// ImageBuildOptions are `image build`'s inputs.
type ImageBuildOptions struct {
	F       *Factory
	Profile string
	Engine  string
	Tag     string
	With    []string
}

// NewCmdImageBuild builds `kandev image build PROFILE`.
func NewCmdImageBuild(f *Factory, runF func(*ImageBuildOptions) error) *cobra.Command {
	opts := &ImageBuildOptions{F: f}
	c := &cobra.Command{
		Use:   "build PROFILE [--engine docker|podman] [--tag TAG] [--with CMD]...",
		Short: "Build a container image for a profile from the agent as installed here, offline",
		Long: `Build a container image for a profile from its agent as installed on this machine,
without a registry or a Dockerfile: the agent's command and everything it runs from (the
files its symlinks lead to, the node_modules tree or install prefix it lies in, its #!
interpreter, the shared libraries of every native file), a shell, git and the common tools
an agent runs (--with adds more), the CA certificates, and a passwd naming you. The files
are streamed into docker import (or podman's) as TAG: the profile's --image if it has one,
else kandev-PROFILE, which then becomes the profile's image.

Nothing is pulled and nothing of your home goes in but the agent's own install.`,
		Example: `  kandev image build claude
  kandev task create "Try it" --profile claude --sandbox docker --start
  kandev image build codex --engine podman --with python3`,
		Args: exactArgs(1, "the PROFILE"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Profile = args[0]
			switch opts.Engine {
			case "", core.SandboxDocker, core.SandboxPodman:
			default:
				return usagef("--engine %q: want docker or podman", opts.Engine)
			}
			if runF != nil {
				return runF(opts)
			}
			return imageBuildRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Engine, "engine", "", "docker or podman; default: the profile's sandbox if it is one, else docker")
	c.Flags().StringVar(&opts.Tag, "tag", "", "the image's name; default: the profile's --image, else kandev-PROFILE")
	c.Flags().StringArrayVar(&opts.With, "with", nil, "another command to put in, found on PATH (repeat)")
	_ = c.RegisterFlagCompletionFunc("engine", cobra.FixedCompletions([]string{core.SandboxDocker, core.SandboxPodman}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func imageBuildRun(ctx context.Context, opts *ImageBuildOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	p, err := client.GetProfile(ctx, opts.Profile)
	if err != nil {
		return err
	}
	engine := opts.Engine
	if engine == "" {
		engine = core.SandboxDocker
		if p.Sandbox == core.SandboxPodman {
			engine = core.SandboxPodman
		}
	}
	tag := opts.Tag
	if tag == "" {
		tag = p.Image
	}
	if tag == "" {
		tag = "kandev-" + p.Name
	}
	exe, err := core.LookCommand(p, f.Executable)
	if err != nil {
		return fmt.Errorf("profile %s: command %s not found on PATH: install the agent here first (kandev doctor)", p.Name, p.Command)
	}
	o := agentimage.Options{Engine: engine, Tag: tag, Executables: []string{exe}, Progress: f.IO.ErrOut}
	if exe != f.Executable {
		// kandev mcp runs inside from the mounted binary: its libraries.
		o.Executables = append(o.Executables, f.Executable)
	}
	o.Tools = append(append([]string(nil), agentimage.Tools...), opts.With...)
	res, err := agentimage.Build(ctx, o)
	if err != nil {
		return err
	}
	if len(opts.With) > 0 {
		for _, w := range opts.With {
			for _, m := range res.Missing {
				if m == w {
					return fmt.Errorf("--with %s: not found on PATH (the image %s was built without it)", w, tag)
				}
			}
		}
	}
	if p.Image != tag {
		p.Image = tag
		if _, err := client.AddProfile(ctx, p); err != nil {
			return fmt.Errorf("the image %s is built, but profile %s could not be set to use it: %w", tag, p.Name, err)
		}
		fmt.Fprintf(f.IO.ErrOut, "profile %s now uses image %s\n", p.Name, tag)
	}
	if f.JSON {
		return f.printJSON(res)
	}
	fmt.Fprintf(f.IO.ErrOut, "built %s with %s: %d files, %.1f MB\n", tag, engine, res.Files, float64(res.Bytes)/1e6)
	fmt.Fprintln(f.IO.Out, tag)
	return nil
}
