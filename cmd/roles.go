package cmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
)

// NewCmdRole groups the role verbs.
func NewCmdRole(f *Factory) *cobra.Command {
	c := group("role", "Manage roles: named agents with a profile and a manager",
		`A role is a named agent identity: a profile plus an optional manager (a role or a person).
When a role leaves a task without handing it on, the task is escalated to its manager, up
the chain to a person; a role with no manager gives it back to the person who handed it
over or created it, as their turn. Every profile is also a role of the same name with no
manager.`)
	c.AddCommand(newCmdRoleAdd(f), newCmdRoleList(f), newCmdRoleShow(f), newCmdRoleEdit(f), newCmdRoleRemove(f))
	return c
}

func newCmdRoleAdd(f *Factory) *cobra.Command {
	var in core.RoleInput
	c := &cobra.Command{
		Use:     "add NAME --profile P [--reports-to NAME]",
		Short:   "Add a role",
		Example: "  kandev person add alice\n  kandev role add lead --profile claude --reports-to alice\n  kandev role add engineer --profile codex --reports-to lead",
		Args:    exactArgs(1, "the role NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			in.Name = args[0]
			if in.Profile == "" {
				return usagef("--profile is required")
			}
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			r, err := client.AddRole(c.Context(), in)
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(r)
			}
			fmt.Fprintf(f.IO.ErrOut, "Added role %s (profile %s%s)\n", r.Name, r.Profile, reportsTo(r))
			return nil
		},
	}
	c.Flags().StringVar(&in.Profile, "profile", "", "the profile its agent runs")
	c.Flags().StringVar(&in.ReportsTo, "reports-to", "", "its manager: a role or a person")
	return c
}

func reportsTo(r core.Role) string {
	if r.ReportsTo == nil {
		return ""
	}
	return ", reports to " + r.ReportsTo.Describe()
}

func newCmdRoleList(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List roles",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			rs, err := client.ListRoles(c.Context())
			if err != nil {
				return err
			}
			if f.JSON {
				if rs == nil {
					rs = []core.Role{}
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
		},
	}
}

func newCmdRoleShow(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a role and its reporting chain",
		Args:  exactArgs(1, "the role NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			r, err := client.GetRole(c.Context(), args[0])
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
				next, err := client.GetRole(c.Context(), cur.ReportsTo.Name)
				if err != nil {
					break
				}
				cur = next
			}
			fmt.Fprintf(f.IO.Out, "chain:    %s\n", chain)
			return nil
		},
	}
}

func newCmdRoleEdit(f *Factory) *cobra.Command {
	var in core.RoleInput
	var noManager bool
	c := &cobra.Command{
		Use:   "edit NAME [--profile P] [--reports-to NAME | --no-manager]",
		Short: "Change a role's profile or manager",
		Args:  exactArgs(1, "the role NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			if noManager {
				if in.ReportsTo != "" {
					return usagef("give --reports-to or --no-manager, not both")
				}
				in.ReportsTo = "-"
			}
			if in.Profile == "" && in.ReportsTo == "" {
				return usagef("nothing to change: give --profile, --reports-to or --no-manager")
			}
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			r, err := client.EditRole(c.Context(), args[0], in)
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(r)
			}
			fmt.Fprintf(f.IO.ErrOut, "Role %s: profile %s%s\n", r.Name, r.Profile, reportsTo(r))
			return nil
		},
	}
	c.Flags().StringVar(&in.Profile, "profile", "", "the profile its agent runs")
	c.Flags().StringVar(&in.ReportsTo, "reports-to", "", "its manager: a role or a person")
	c.Flags().BoolVar(&noManager, "no-manager", false, "remove its manager")
	return c
}

func newCmdRoleRemove(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a role (it must have no open tasks and no reports)",
		Args:  exactArgs(1, "the role NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			r, err := client.RemoveRole(c.Context(), args[0])
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(r)
			}
			fmt.Fprintf(f.IO.ErrOut, "Removed role %s\n", r.Name)
			return nil
		},
	}
}

// NewCmdPerson groups the person verbs.
func NewCmdPerson(f *Factory) *cobra.Command {
	c := group("person", "Manage people (humans who can be handed tasks)", "")
	c.AddCommand(&cobra.Command{
		Use:   "add NAME",
		Short: "Add a person",
		Args:  exactArgs(1, "the person's NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			p, err := client.AddPerson(c.Context(), args[0])
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(p)
			}
			fmt.Fprintf(f.IO.ErrOut, "Added person %s\n", p.Name)
			return nil
		},
	}, &cobra.Command{
		Use:   "list",
		Short: "List people",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			ps, err := client.ListPersons(c.Context())
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(ps)
			}
			for _, p := range ps {
				suffix := ""
				if p.Name == core.Operator {
					suffix = "  (you)"
				}
				fmt.Fprintf(f.IO.Out, "%s%s\n", p.Name, suffix)
			}
			return nil
		},
	})
	return c
}

// --- handoff and block ---------------------------------------------------------

// NewCmdTaskHandoff builds `kandev task handoff`.
func NewCmdTaskHandoff(f *Factory) *cobra.Command {
	var in core.HandoffInput
	c := &cobra.Command{
		Use:   "handoff ID --to NAME|back [--message TEXT]",
		Short: "Hand a task to a role (its agent takes over) or a person",
		Example: `  kandev task handoff k3f9qa --to engineer --message "the failing test is in auth_test.go"
  kandev task handoff k3f9qa --to back`,
		Args: exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			if in.To == "" {
				return usagef("--to is required: a role, a person, or back")
			}
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			res, err := client.HandoffTask(c.Context(), args[0], in)
			if err != nil {
				return err
			}
			if f.JSON {
				return f.printJSON(res)
			}
			fmt.Fprintf(f.IO.ErrOut, "Task %s handed from %s to %s %s (%s)\n", res.TaskID, res.From.String(), res.To.Kind, res.To.Name, res.Delivered)
			return nil
		},
	}
	c.Flags().StringVar(&in.To, "to", "", "a role, a person, or back (whoever handed it to its current assignee)")
	c.Flags().StringVarP(&in.Message, "message", "m", "", "what the next holder needs to know")
	return c
}

// NewCmdTaskBlock builds `kandev task block`.
func NewCmdTaskBlock(f *Factory) *cobra.Command {
	var in core.BlockInput
	c := &cobra.Command{
		Use:   "block ID --on OTHER... [--remove]",
		Short: "Make a task wait on others (it is woken when each finishes)",
		Args:  exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			if len(in.On) == 0 {
				return usagef("--on is required")
			}
			client, err := f.Client(c.Context())
			if err != nil {
				return err
			}
			t, err := client.BlockTask(c.Context(), args[0], in)
			if err != nil {
				return err
			}
			return printTaskResult(f, t, "Task %s waits on: %v", t.ID, t.BlockedBy)
		},
	}
	c.Flags().StringArrayVar(&in.On, "on", nil, "a task it waits on (repeat)")
	c.Flags().BoolVar(&in.Remove, "remove", false, "stop waiting on them")
	return c
}
