package cmd

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/kandev/kandev/core/api"
	"github.com/spf13/cobra"
)

// NewCmdRole groups the role verbs.
func NewCmdRole(f *Factory) *cobra.Command {
	c := group("role", "Manage roles: named agents with a profile and a manager",
		`A role is a named agent identity: a profile plus an optional manager (a role or a person).
When a role leaves a task without handing it on, the task is escalated to its manager, up
the chain to a person; a role with no manager gives it back to the person who handed it
over or created it, as their turn. Every profile is also a role of the same name with no
manager.`)
	c.AddCommand(NewCmdRoleAdd(f, nil), NewCmdRoleList(f, nil), NewCmdRoleShow(f, nil), NewCmdRoleEdit(f, nil), NewCmdRoleRemove(f, nil))
	return c
}

// RoleAddOptions are `role add`'s inputs.
type RoleAddOptions struct {
	F     *Factory
	Input api.RoleInput
}

// NewCmdRoleAdd builds `kandev role add`.
func NewCmdRoleAdd(f *Factory, runF func(*RoleAddOptions) error) *cobra.Command {
	opts := &RoleAddOptions{F: f}
	c := &cobra.Command{
		Use:     "add NAME --profile P [--reports-to NAME]",
		Short:   "Add a role",
		Example: "  kandev person add alice\n  kandev role add lead --profile claude --reports-to alice\n  kandev role add engineer --profile codex --reports-to lead",
		Args:    exactArgs(1, "the role NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Input.Name = args[0]
			if opts.Input.Profile == "" {
				return usagef("--profile is required")
			}
			if runF != nil {
				return runF(opts)
			}
			return roleAddRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Input.Profile, "profile", "", "the profile its agent runs")
	c.Flags().StringVar(&opts.Input.ReportsTo, "reports-to", "", "its manager: a role or a person")
	return c
}

func roleAddRun(ctx context.Context, opts *RoleAddOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	r, err := client.AddRole(ctx, opts.Input)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(r)
	}
	fmt.Fprintf(f.IO.ErrOut, "Added role %s (profile %s%s)\n", r.Name, r.Profile, reportsTo(r))
	return nil
}

func reportsTo(r api.Role) string {
	if r.ReportsTo == nil {
		return ""
	}
	return ", reports to " + r.ReportsTo.Describe()
}

// RoleListOptions are `role list`'s inputs.
type RoleListOptions struct {
	F *Factory
}

// NewCmdRoleList builds `kandev role list`.
func NewCmdRoleList(f *Factory, runF func(*RoleListOptions) error) *cobra.Command {
	opts := &RoleListOptions{F: f}
	return &cobra.Command{
		Use:   "list",
		Short: "List roles",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return roleListRun(c.Context(), opts)
		},
	}
}

func roleListRun(ctx context.Context, opts *RoleListOptions) error {
	f := opts.F
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	rs, err := client.ListRoles(ctx)
	if err != nil {
		return err
	}
	if f.JSON {
		if rs == nil {
			rs = []api.Role{}
		}
		return f.printJSON(rs)
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPROFILE\tREPORTS TO\tKIND")
	for _, r := range rs {
		mgr, kind := "-", "named"
		if r.ReportsTo != nil {
			mgr = r.ReportsTo.Describe()
		}
		if r.Implicit {
			kind = "profile"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Profile, mgr, kind)
	}
	return tw.Flush()
}

// RoleShowOptions are `role show`'s inputs.
type RoleShowOptions struct {
	F    *Factory
	Name string
}

// NewCmdRoleShow builds `kandev role show`.
func NewCmdRoleShow(f *Factory, runF func(*RoleShowOptions) error) *cobra.Command {
	opts := &RoleShowOptions{F: f}
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a role and its reporting chain",
		Args:  exactArgs(1, "the role NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return roleShowRun(c.Context(), opts)
		},
	}
}

func roleShowRun(ctx context.Context, opts *RoleShowOptions) error {
	f := opts.F
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	r, err := client.GetRole(ctx, opts.Name)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(r)
	}
	fmt.Fprintf(f.IO.Out, "name:     %s\nprofile:  %s\n", r.Name, r.Profile)
	chain := r.Name
	for cur := r; cur.ReportsTo != nil; {
		chain += " → " + cur.ReportsTo.Name
		if !cur.ReportsTo.IsRole() {
			break
		}
		next, err := client.GetRole(ctx, cur.ReportsTo.Name)
		if err != nil {
			break
		}
		cur = next
	}
	fmt.Fprintf(f.IO.Out, "chain:    %s\n", chain)
	return nil
}

// RoleEditOptions are `role edit`'s inputs.
type RoleEditOptions struct {
	F     *Factory
	Name  string
	Input api.RoleInput
}

// NewCmdRoleEdit builds `kandev role edit`.
func NewCmdRoleEdit(f *Factory, runF func(*RoleEditOptions) error) *cobra.Command {
	opts := &RoleEditOptions{F: f}
	var noManager bool
	c := &cobra.Command{
		Use:   "edit NAME [--profile P] [--reports-to NAME | --no-manager]",
		Short: "Change a role's profile or manager",
		Args:  exactArgs(1, "the role NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if noManager {
				if opts.Input.ReportsTo != "" {
					return usagef("give --reports-to or --no-manager, not both")
				}
				opts.Input.ReportsTo = "-"
			}
			if opts.Input.Profile == "" && opts.Input.ReportsTo == "" {
				return usagef("nothing to change: give --profile, --reports-to or --no-manager")
			}
			if runF != nil {
				return runF(opts)
			}
			return roleEditRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Input.Profile, "profile", "", "the profile its agent runs")
	c.Flags().StringVar(&opts.Input.ReportsTo, "reports-to", "", "its manager: a role or a person")
	c.Flags().BoolVar(&noManager, "no-manager", false, "remove its manager")
	return c
}

func roleEditRun(ctx context.Context, opts *RoleEditOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	r, err := client.EditRole(ctx, opts.Name, opts.Input)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(r)
	}
	fmt.Fprintf(f.IO.ErrOut, "Role %s: profile %s%s\n", r.Name, r.Profile, reportsTo(r))
	return nil
}

// RoleRemoveOptions are `role remove`'s inputs.
type RoleRemoveOptions struct {
	F    *Factory
	Name string
}

// NewCmdRoleRemove builds `kandev role remove`.
func NewCmdRoleRemove(f *Factory, runF func(*RoleRemoveOptions) error) *cobra.Command {
	opts := &RoleRemoveOptions{F: f}
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a role (it must have no open tasks and no reports)",
		Args:  exactArgs(1, "the role NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return roleRemoveRun(c.Context(), opts)
		},
	}
}

func roleRemoveRun(ctx context.Context, opts *RoleRemoveOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	r, err := client.RemoveRole(ctx, opts.Name, api.RemoveRoleInput{})
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(r)
	}
	fmt.Fprintf(f.IO.ErrOut, "Removed role %s\n", r.Name)
	return nil
}
