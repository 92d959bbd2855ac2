package cmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core/config"
)

// NewCmdConfig reads and writes config.toml.
func NewCmdConfig(f *Factory) *cobra.Command {
	c := group("config", "Read and change kandev's settings (config.toml)",
		`kandev's settings live in $XDG_CONFIG_HOME/kandev/config.toml (~/.config/kandev/config.toml;
$KANDEV_CONFIG names another file). A flag beats the environment, which beats the file,
which beats the built-in default. Keys: profile, permission, idle_timeout, start_timeout,
workspace, notifications (docs/config.md).`)
	get, set, unset := newCmdConfigGet(f), newCmdConfigSet(f), newCmdConfigUnset(f)
	get.ValidArgsFunction, set.ValidArgsFunction, unset.ValidArgsFunction = completeConfig, completeConfig, completeConfig
	c.AddCommand(get, set, unset, newCmdConfigList(f), newCmdConfigPath(f))
	return c
}

// completeConfig offers the keys, then (for set) the values a key takes.
func completeConfig(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch {
	case len(args) == 0:
		var out []cobra.Completion
		for _, k := range config.Keys() {
			out = append(out, k.Name+"\t"+k.Doc)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	case len(args) == 1 && c.Name() == "set":
		if k, ok := config.Lookup(args[0]); ok {
			return k.Choices(), cobra.ShellCompDirectiveNoFileComp
		}
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

func newCmdConfigGet(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "get KEY",
		Short: "Print a setting's value as kandev uses it (environment, else file, else default)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if _, ok := config.Lookup(args[0]); !ok {
				return usagef("unknown config key %q: see kandev config list", args[0])
			}
			cfg, err := config.Load(f.Getenv)
			if err != nil {
				return err
			}
			v, err := cfg.Get(args[0])
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(v)
			}
			fmt.Fprintln(f.IO.Out, v.Value)
			return nil
		},
	}
}

func newCmdConfigSet(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "set KEY VALUE",
		Short:   "Set a key in config.toml, keeping the others",
		Example: "  kandev config set profile claude\n  kandev config set idle_timeout 30m",
		Args:    cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			path, err := config.Path(f.Getenv)
			if err != nil {
				return err
			}
			k, ok := config.Lookup(args[0])
			if !ok {
				return usagef("unknown config key %q: see kandev config list", args[0])
			}
			v, err := config.Set(path, args[0], args[1])
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(config.Value{Key: k.Name, Value: v, Source: config.SourceFile, Env: k.Env})
			}
			fmt.Fprintf(f.IO.ErrOut, "Set %s = %s in %s\n", k.Name, v, path)
			if e := f.Getenv(k.Env); e != "" {
				fmt.Fprintf(f.IO.ErrOut, "Note: $%s=%s is set and overrides the file\n", k.Env, e)
			}
			return nil
		},
	}
}

func newCmdConfigUnset(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "unset KEY",
		Short: "Remove a key from config.toml (back to its default)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			path, err := config.Path(f.Getenv)
			if err != nil {
				return err
			}
			if _, ok := config.Lookup(args[0]); !ok {
				return usagef("unknown config key %q: see kandev config list", args[0])
			}
			if err := config.Unset(path, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "Removed %s from %s\n", args[0], path)
			return nil
		},
	}
}

func newCmdConfigList(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List every setting, its value and where the value comes from (env, file, default)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := config.Load(f.Getenv)
			if err != nil {
				return err
			}
			vs, err := cfg.List()
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(vs)
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tFROM\tENV")
			for _, v := range vs {
				val := v.Value
				if val == "" {
					val = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Key, val, v.Source, v.Env)
			}
			return tw.Flush()
		},
	}
}

func newCmdConfigPath(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "path",
		Short: "Print where the configuration file is (it may not exist yet)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			path, err := config.Path(f.Getenv)
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(map[string]string{"path": path})
			}
			fmt.Fprintln(f.IO.Out, path)
			return nil
		},
	}
}
