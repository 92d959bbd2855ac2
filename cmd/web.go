package cmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/skip2/go-qrcode"
	"github.com/spf13/cobra"

	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/textsafe"
)

// NewCmdWeb groups the web inbox's verbs.
func NewCmdWeb(f *Factory) *cobra.Command {
	c := group("web", "Pair browsers with the web inbox and manage them", `The daemon serves a web inbox of what needs you when web_listen is set (or kandev serve
--web ADDR): answer, allow, message, stop, hand back and raise budgets from a phone.
Nothing on it opens without a paired device. See docs/web.md for reaching it safely.`)
	c.AddCommand(NewCmdWebPair(f, nil), NewCmdWebDevices(f, nil), NewCmdWebRevoke(f, nil))
	return c
}

// webClient is the client's side of the web inbox.
func webClient(client api.Client) (api.WebClient, error) {
	w, ok := client.(api.WebClient)
	if !ok {
		return nil, fmt.Errorf("this client does not reach the web inbox")
	}
	return w, nil
}

// WebPairOptions are `web pair`'s inputs.
type WebPairOptions struct {
	F    *Factory
	Name string
	NoQR bool
}

// NewCmdWebPair builds `kandev web pair`.
func NewCmdWebPair(f *Factory, runF func(*WebPairOptions) error) *cobra.Command {
	opts := &WebPairOptions{F: f}
	c := &cobra.Command{
		Use:   "pair [--name NAME]",
		Short: "Print a one-time code (and a QR code) that pairs a browser with the web inbox",
		Long: `Print a one-time pairing code, the inbox's pairing URL and a QR code of it. Open the URL
(or scan the code) on the phone and press Pair: the browser gets a device credential of
its own (kandev web devices lists it, kandev web revoke ends it). The code works once,
for ten minutes. The web inbox must be on (web_listen, or kandev serve --web ADDR).`,
		Example: `  kandev web pair --name phone`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return webPairRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Name, "name", "", "what to call the device in kandev web devices (default browser)")
	c.Flags().BoolVar(&opts.NoQR, "no-qr", false, "print no QR code")
	return c
}

func webPairRun(ctx context.Context, opts *WebPairOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	w, err := webClient(client)
	if err != nil {
		return err
	}
	p, err := w.WebPair(ctx, api.WebPairInput{Name: opts.Name})
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(p)
	}
	if p.Warning != "" {
		fmt.Fprintf(f.IO.ErrOut, "WARNING: %s\n\n", p.Warning)
	}
	if !opts.NoQR {
		if err := printQR(f.IO.Out, p.URL); err != nil {
			return err
		}
	}
	fmt.Fprintf(f.IO.Out, "Pairing code: %s\n", p.Code)
	fmt.Fprintf(f.IO.Out, "Open:         %s\n", p.URL)
	fmt.Fprintf(f.IO.Out, "For device %q; the code works once, until %s (%s).\n", p.Name,
		p.ExpiresAt.Local().Format("15:04"), time.Until(p.ExpiresAt).Round(time.Minute))
	return nil
}

// printQR draws the URL as a QR code of half blocks, two rows of modules
// a line, which a phone's camera reads off a terminal.
func printQR(out io.Writer, url string) error {
	q, err := qrcode.New(url, qrcode.Low)
	if err != nil {
		return fmt.Errorf("QR code: %w", err)
	}
	fmt.Fprintln(out, q.ToSmallString(false))
	return nil
}

// WebDevicesOptions are `web devices`'s inputs.
type WebDevicesOptions struct {
	F *Factory
}

// NewCmdWebDevices builds `kandev web devices`.
func NewCmdWebDevices(f *Factory, runF func(*WebDevicesOptions) error) *cobra.Command {
	opts := &WebDevicesOptions{F: f}
	return &cobra.Command{
		Use:   "devices",
		Short: "List the browsers paired with the web inbox",
		Long: `List the paired browsers: id, name, when paired and last seen, how many changes were made
from each (answers, messages, stops...), and whether it was revoked.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return webDevicesRun(c.Context(), opts)
		},
	}
}

func webDevicesRun(ctx context.Context, opts *WebDevicesOptions) error {
	f := opts.F
	client, err := f.ReadClient(ctx)
	if err != nil {
		return err
	}
	w, err := webClient(client)
	if err != nil {
		return err
	}
	ds, err := w.WebDevices(ctx)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(ds)
	}
	if len(ds) == 0 {
		fmt.Fprintln(f.IO.ErrOut, "No paired devices (kandev web pair pairs one)")
		return nil
	}
	fmt.Fprintf(f.IO.Out, "%-8s  %-20s  %-16s  %-16s  %7s  %s\n", "ID", "NAME", "PAIRED", "LAST SEEN", "ACTIONS", "STATE")
	for _, d := range ds {
		state := "active"
		if d.Revoked {
			state = "revoked " + d.RevokedAt.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(f.IO.Out, "%-8s  %-20s  %-16s  %-16s  %7d  %s\n", d.ID, textsafe.Line(d.Name),
			d.PairedAt.Local().Format("2006-01-02 15:04"), d.LastSeenAt.Local().Format("2006-01-02 15:04"), d.Actions, state)
	}
	return nil
}

// WebRevokeOptions are `web revoke`'s inputs.
type WebRevokeOptions struct {
	F  *Factory
	ID string
}

// NewCmdWebRevoke builds `kandev web revoke`.
func NewCmdWebRevoke(f *Factory, runF func(*WebRevokeOptions) error) *cobra.Command {
	opts := &WebRevokeOptions{F: f}
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a paired browser: its credential opens nothing from now on",
		Args:  exactArgs(1, "the device's ID (kandev web devices)"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return webRevokeRun(c.Context(), opts)
		},
	}
}

func webRevokeRun(ctx context.Context, opts *WebRevokeOptions) error {
	f := opts.F
	client, err := f.Client(ctx)
	if err != nil {
		return err
	}
	w, err := webClient(client)
	if err != nil {
		return err
	}
	d, err := w.WebRevoke(ctx, opts.ID)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.printJSON(d)
	}
	fmt.Fprintf(f.IO.ErrOut, "Revoked device %s (%s)\n", d.ID, textsafe.Line(d.Name))
	return nil
}
