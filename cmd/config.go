package cmd

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/config"
)

// NewCmdConfig reads and writes config.toml.
func NewCmdConfig(f *Factory) *cobra.Command {
	c := group("config", "Read and change kandev's settings (config.toml)",
		`kandev's settings live in $XDG_CONFIG_HOME/kandev/config.toml (~/.config/kandev/config.toml;
$KANDEV_CONFIG names another file). A flag beats the environment, which beats the file,
which beats the built-in default. Keys: profile, permission, idle_timeout, start_timeout,
workspace, notifications (docs/config.md).`)
	get, set, unset := NewCmdConfigGet(f, nil), NewCmdConfigSet(f, nil), NewCmdConfigUnset(f, nil)
	get.ValidArgsFunction, set.ValidArgsFunction, unset.ValidArgsFunction = completeConfig, completeConfig, completeConfig
	c.AddCommand(get, set, unset, NewCmdConfigList(f, nil), NewCmdConfigPath(f, nil))
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

// ConfigGetOptions are `config get`'s inputs.
type ConfigGetOptions struct {
	F   *Factory
	Key string
}

// NewCmdConfigGet builds `kandev config get`.
func NewCmdConfigGet(f *Factory, runF func(*ConfigGetOptions) error) *cobra.Command {
	opts := &ConfigGetOptions{F: f}
	return &cobra.Command{
		Use:   "get KEY",
		Short: "Print a setting's value as kandev uses it (environment, else file, else default)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Key = args[0]
			if _, ok := config.Lookup(opts.Key); !ok {
				return usagef("unknown config key %q: see kandev config list", opts.Key)
			}
			if runF != nil {
				return runF(opts)
			}
			return configGetRun(c.Context(), opts)
		},
	}
}

func configGetRun(_ context.Context, opts *ConfigGetOptions) error {
	f := opts.F
	cfg, err := config.Load(f.Getenv)
	if err != nil {
		return err
	}
	v, err := cfg.Get(opts.Key)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(v)
	}
	fmt.Fprintln(f.IO.Out, v.Value)
	return nil
}

// ConfigSetOptions are `config set`'s inputs.
type ConfigSetOptions struct {
	F     *Factory
	Key   string
	Value string
}

// NewCmdConfigSet builds `kandev config set`.
func NewCmdConfigSet(f *Factory, runF func(*ConfigSetOptions) error) *cobra.Command {
	opts := &ConfigSetOptions{F: f}
	return &cobra.Command{
		Use:     "set KEY VALUE",
		Short:   "Set a key in config.toml, keeping the others",
		Example: "  kandev config set profile claude\n  kandev config set idle_timeout 30m",
		Args:    cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Key, opts.Value = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return configSetRun(c.Context(), opts)
		},
	}
}

func configSetRun(ctx context.Context, opts *ConfigSetOptions) error {
	f := opts.F
	path, err := config.Path(f.Getenv)
	if err != nil {
		return err
	}
	k, ok := config.Lookup(opts.Key)
	if !ok {
		return usagef("unknown config key %q: see kandev config list", opts.Key)
	}
	if k.Name == "profile" && opts.Value != "" {
		if err := checkProfileExists(ctx, f, strings.TrimSpace(opts.Value)); err != nil {
			return err
		}
	}
	v, err := config.Set(path, opts.Key, opts.Value)
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
}

// checkProfileExists refuses a default profile kandev does not have: a
// typo would otherwise make every new task wait on a profile that never
// comes. Built-in profiles need no daemon; others are asked of it.
func checkProfileExists(ctx context.Context, f *Factory, name string) error {
	if _, ok := core.BuiltinProfile(name); ok || name == "" {
		return nil
	}
	client, err := f.Client(ctx)
	if err != nil {
		return fmt.Errorf("profile %s is not built in, and the daemon that knows the others cannot be asked: %w", name, err)
	}
	ps, err := client.ListProfiles(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, p := range ps {
		if p.Name == name {
			return nil
		}
		names = append(names, p.Name)
	}
	return core.Errorf(core.CodeValidation, "profile: no profile %q (known: %s); add one with kandev profile add %s ...", name, strings.Join(names, ", "), name)
}

// ConfigUnsetOptions are `config unset`'s inputs.
type ConfigUnsetOptions struct {
	F   *Factory
	Key string
}

// NewCmdConfigUnset builds `kandev config unset`.
func NewCmdConfigUnset(f *Factory, runF func(*ConfigUnsetOptions) error) *cobra.Command {
	opts := &ConfigUnsetOptions{F: f}
	return &cobra.Command{
		Use:   "unset KEY",
		Short: "Remove a key from config.toml (back to its default)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Key = args[0]
			if runF != nil {
				return runF(opts)
			}
			return configUnsetRun(c.Context(), opts)
		},
	}
}

func configUnsetRun(_ context.Context, opts *ConfigUnsetOptions) error {
	f := opts.F
	path, err := config.Path(f.Getenv)
	if err != nil {
		return err
	}
	if _, ok := config.Lookup(opts.Key); !ok {
		return usagef("unknown config key %q: see kandev config list", opts.Key)
	}
	if err := config.Unset(path, opts.Key); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "Removed %s from %s\n", opts.Key, path)
	return nil
}

// ConfigListOptions are `config list`'s inputs.
type ConfigListOptions struct {
	F *Factory
}

// NewCmdConfigList builds `kandev config list`.
func NewCmdConfigList(f *Factory, runF func(*ConfigListOptions) error) *cobra.Command {
	opts := &ConfigListOptions{F: f}
	return &cobra.Command{
		Use:   "list",
		Short: "List every setting, its value and where the value comes from (env, file, default)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return configListRun(c.Context(), opts)
		},
	}
}

func configListRun(_ context.Context, opts *ConfigListOptions) error {
	f := opts.F
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
}

// ConfigPathOptions are `config path`'s inputs.
type ConfigPathOptions struct {
	F *Factory
}

// NewCmdConfigPath builds `kandev config path`.
func NewCmdConfigPath(f *Factory, runF func(*ConfigPathOptions) error) *cobra.Command {
	opts := &ConfigPathOptions{F: f}
	return &cobra.Command{
		Use:   "path",
		Short: "Print where the configuration file is (it may not exist yet)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return configPathRun(c.Context(), opts)
		},
	}
}

func configPathRun(_ context.Context, opts *ConfigPathOptions) error {
	f := opts.F
	path, err := config.Path(f.Getenv)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(map[string]string{"path": path})
	}
	fmt.Fprintln(f.IO.Out, path)
	return nil
}
