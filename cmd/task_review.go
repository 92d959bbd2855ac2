package cmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/kandev/kandev/core/api"
	"github.com/spf13/cobra"
)

// TaskReviewOptions are `task review`'s inputs: each Comments[i] is the
// FILE:LINE[-LINE] of the --comment flag paired with Texts[i], the i-th
// argument after the task's ID.
type TaskReviewOptions struct {
	F         *Factory
	ID        string
	Places    []string
	Texts     []string
	Message   string
	Interrupt bool
	List      bool
}

// NewCmdTaskReview builds `kandev task review`.
func NewCmdTaskReview(f *Factory, runF func(*TaskReviewOptions) error) *cobra.Command {
	opts := &TaskReviewOptions{F: f}
	c := &cobra.Command{
		Use:   "review ID [--comment FILE:LINE[-LINE] TEXT]... | review ID --list",
		Short: "Comment on lines of a task's diff; the agent gets them as one review",
		Long: `Send the task's agent a review: comments on lines of its diff (kandev task diff),
each given as --comment FILE:LINE TEXT or --comment FILE:FIRST-LAST TEXT, lines numbered
as in the changed file. The agent gets one message with every comment, its file and
lines and the lines of the diff around it, queued like a message (or, with --interrupt,
instead of its running turn). Every comment must point at lines the diff shows, or
nothing is sent. The comments are kept on the task: --list shows each one open, or
outdated once the lines it points at have changed.`,
		Example: `  kandev task review a1b2c3 --comment login.go:12 'use a constant' --comment login.go:30-34 'this loop can go'
  kandev task review a1b2c3 --list`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("%s takes a task ID", c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID, opts.Texts = args[0], args[1:]
			switch {
			case opts.List && (len(opts.Places) > 0 || len(opts.Texts) > 0 || opts.Message != "" || opts.Interrupt):
				return usagef("--list takes only the task ID")
			case !opts.List && len(opts.Places) == 0:
				return usagef("give at least one --comment FILE:LINE TEXT, or --list")
			case !opts.List && len(opts.Places) != len(opts.Texts):
				return usagef("each --comment FILE:LINE is followed by its TEXT (%d --comment, %d texts)", len(opts.Places), len(opts.Texts))
			}
			if runF != nil {
				return runF(opts)
			}
			return taskReviewRun(c.Context(), opts)
		},
	}
	c.Flags().StringArrayVar(&opts.Places, "comment", nil, "a comment on FILE:LINE or FILE:FIRST-LAST, its TEXT the next argument (repeatable)")
	c.Flags().StringVarP(&opts.Message, "message", "m", "", "the review's own message, above its comments")
	c.Flags().BoolVar(&opts.Interrupt, "interrupt", false, "cancel the running turn and deliver the review instead")
	c.Flags().BoolVar(&opts.List, "list", false, "list the comments kept on the task, open or outdated")
	return c
}

// parsePlace reads FILE:LINE or FILE:FIRST-LAST (the last colon splits,
// so a path may hold colons).
func parsePlace(s string) (api.ReviewCommentInput, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || i == len(s)-1 {
		return api.ReviewCommentInput{}, usagef("--comment %q: want FILE:LINE or FILE:FIRST-LAST", s)
	}
	c := api.ReviewCommentInput{File: s[:i]}
	first, last, isRange := strings.Cut(s[i+1:], "-")
	var err error
	if c.Line, err = strconv.Atoi(first); err != nil || c.Line < 1 {
		return api.ReviewCommentInput{}, usagef("--comment %q: %q is not a line number", s, first)
	}
	if isRange {
		if c.EndLine, err = strconv.Atoi(last); err != nil || c.EndLine < c.Line {
			return api.ReviewCommentInput{}, usagef("--comment %q: %q is not a line at or after %d", s, last, c.Line)
		}
	}
	return c, nil
}

func taskReviewRun(ctx context.Context, opts *TaskReviewOptions) error {
	f := opts.F
	var in api.MessageInput
	if !opts.List {
		in = api.MessageInput{Text: opts.Message}
		for i, p := range opts.Places {
			c, err := parsePlace(p)
			if err != nil {
				return err
			}
			c.Text = opts.Texts[i]
			in.Comments = append(in.Comments, c)
		}
		if opts.Interrupt {
			in.Delivery = api.DeliveryInterrupt
		}
	}
	connect := f.Client
	if opts.List {
		connect = f.ReadClient // listing the comments only reads
	}
	client, err := connect(ctx)
	if err != nil {
		return err
	}
	if opts.List {
		v, err := client.TaskReview(ctx, opts.ID)
		if err != nil {
			return err
		}
		if f.JSON {
			return f.printJSON(v)
		}
		printReview(f, v)
		return nil
	}
	res, err := client.MessageTask(ctx, opts.ID, in)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(res)
	}
	n := fmt.Sprintf("%d comment", len(res.Comments))
	if len(res.Comments) != 1 {
		n += "s"
	}
	switch res.Status {
	case "queued":
		fmt.Fprintf(f.IO.ErrOut, "Review of task %s (%s) queued (position %d)\n", res.TaskID, n, res.Position)
	default:
		fmt.Fprintf(f.IO.ErrOut, "Review of task %s (%s): %s\n", res.TaskID, n, res.Status)
	}
	return nil
}

// printReview lists the comments: a head line each (id, state, place,
// author), then the comment's text indented.
func printReview(f *Factory, v api.ReviewView) {
	if len(v.Comments) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "No review comments on task %s\n", v.TaskID)
		return
	}
	for _, c := range v.Comments {
		fmt.Fprintf(f.IO.Out, "#%d  %-8s  %s  %s\n", c.ID, c.State, placeOf(c), c.Author.Label())
		for _, l := range strings.Split(c.Text, "\n") {
			fmt.Fprintf(f.IO.Out, "    %s\n", l)
		}
	}
	if v.Unchecked != "" {
		fmt.Fprintf(f.IO.ErrOut, "(states not checked: %s)\n", v.Unchecked)
	}
}

func placeOf(c api.ReviewComment) string {
	if c.EndLine > c.Line {
		return fmt.Sprintf("%s:%d-%d", c.File, c.Line, c.EndLine)
	}
	return fmt.Sprintf("%s:%d", c.File, c.Line)
}
