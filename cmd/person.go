package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
)

// NewCmdPerson groups the person verbs.
func NewCmdPerson(f *Factory) *cobra.Command {
	c := group("person", "Manage people (humans who can be handed tasks)", "")
	c.AddCommand(NewCmdPersonAdd(f, nil), NewCmdPersonList(f, nil))
	return c
}

// PersonAddOptions are `person add`'s inputs.
type PersonAddOptions struct {
	F    *Factory
	Name string
}

// NewCmdPersonAdd builds `kandev person add`.
func NewCmdPersonAdd(f *Factory, runF func(*PersonAddOptions) error) *cobra.Command {
	opts := &PersonAddOptions{F: f}
	return &cobra.Command{
		Use:   "add NAME",
		Short: "Add a person",
		Args:  exactArgs(1, "the person's NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return personAddRun(c.Context(), opts)
		},
	}
}

func personAddRun(ctx context.Context, opts *PersonAddOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	p, err := client.AddPerson(ctx, api.AddPersonInput{Name: opts.Name})
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(p)
	}
	fmt.Fprintf(f.IO.ErrOut, "Added person %s\n", p.Name)
	return nil
}

// PersonListOptions are `person list`'s inputs.
type PersonListOptions struct {
	F *Factory
}

// NewCmdPersonList builds `kandev person list`.
func NewCmdPersonList(f *Factory, runF func(*PersonListOptions) error) *cobra.Command {
	opts := &PersonListOptions{F: f}
	return &cobra.Command{
		Use:   "list",
		Short: "List people",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return personListRun(c.Context(), opts)
		},
	}
}

func personListRun(ctx context.Context, opts *PersonListOptions) error {
	f := opts.F
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	ps, err := client.ListPersons(ctx)
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
}
