package hosts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/kandev/kandev/core/sandbox"
)

// probeFS is a host's file system as sandbox.Describe asks it (a
// sandbox.FS): questions it cannot answer yet are recorded, given a
// harmless default, and answered all at once by one script on the host
// (answer); Describe then runs again on the answers. Each round costs one
// ssh round trip over the master; a view needs two or three (a command
// found on PATH leads to its #! line, that to its interpreter).
type probeFS struct {
	answers map[probeQ]probeA
	asked   []probeQ
}

type probeQ struct{ op, path string }

type probeA struct {
	ok     bool
	fields []string
}

func newProbeFS() *probeFS { return &probeFS{answers: map[probeQ]probeA{}} }

var _ sandbox.FS = (*probeFS)(nil)

// errUnknown is the answer to a question not answered yet; the round's
// result is thrown away.
var errUnknown = errors.New("not probed yet")

func (f *probeFS) get(op, p string) (probeA, bool) {
	q := probeQ{op, p}
	a, ok := f.answers[q]
	if !ok {
		for _, have := range f.asked {
			if have == q {
				return probeA{}, false
			}
		}
		f.asked = append(f.asked, q)
	}
	return a, ok
}

func (f *probeFS) one(op, p string) (string, error) {
	a, ok := f.get(op, p)
	if !ok {
		return "", errUnknown
	}
	if !a.ok || len(a.fields) == 0 {
		return "", fmt.Errorf("%s %s: %w", op, p, os.ErrNotExist)
	}
	return a.fields[0], nil
}

func (f *probeFS) Exists(p string) bool {
	a, ok := f.get("exists", p)
	return ok && a.ok
}

func (f *probeFS) EvalSymlinks(p string) (string, error) { return f.one("realpath", p) }

func (f *probeFS) FirstLine(p string) string {
	s, _ := f.one("firstline", p)
	return s
}

func (f *probeFS) LookPath(name string) (string, error) {
	s, err := f.one("lookpath", name)
	if err == nil && !strings.HasPrefix(s, "/") {
		return "", fmt.Errorf("%s: %w", name, os.ErrNotExist)
	}
	return s, err
}

func (f *probeFS) MkdirAll(p string, perm os.FileMode) error {
	a, ok := f.get(fmt.Sprintf("mkdir%04o", perm), p)
	if !ok {
		return nil // made in the next round, before anything reads it
	}
	if !a.ok {
		return fmt.Errorf("mkdir %s on the host failed", p)
	}
	return nil
}

func (f *probeFS) ReadDir(p string) ([]string, error) {
	a, ok := f.get("readdir", p)
	if !ok {
		return nil, errUnknown
	}
	if !a.ok {
		return nil, fmt.Errorf("readdir %s: %w", p, os.ErrNotExist)
	}
	return a.fields, nil
}

func (f *probeFS) ReadFile(p string) ([]byte, error) {
	s, err := f.one("readfile", p)
	return []byte(s), err
}

// BwrapWorks says whether bubblewrap runs on the host, with its error.
func (f *probeFS) BwrapWorks() (bool, string) {
	a, ok := f.get("bwrap", "")
	if !ok {
		return true, "" // asked; the round is thrown away
	}
	msg := ""
	if len(a.fields) > 0 {
		msg = a.fields[0]
	}
	return a.ok, msg
}

// Touch makes sure a file exists on the host (an empty one if it did not).
func (f *probeFS) Touch(p string) error {
	a, ok := f.get("touch", p)
	if ok && !a.ok {
		return fmt.Errorf("create %s on the host failed", p)
	}
	return nil
}

// Getenv is a variable of the remote account's environment (HOME).
func (f *probeFS) Getenv(name string) (string, bool) {
	s, err := f.one("env", name)
	return s, err == nil
}

// pending says whether the last round asked what is not answered yet.
func (f *probeFS) pending() bool { return len(f.asked) > 0 }

// probeScript answers each question as NUL-separated fields: "@" opens an
// answer, "=" carries a value, "!" says the answer is no (missing,
// failed). Paths are single-quoted, so none is re-parsed by the shell.
func probeScript(qs []probeQ) string {
	var b strings.Builder
	b.WriteString(`ans() { printf '@\0'; }
val() { printf '=%s\0' "$1"; }
no() { printf '!\0'; }
`)
	for _, q := range qs {
		p := Quote(q.path)
		b.WriteString("ans; ")
		switch {
		case q.op == "exists":
			fmt.Fprintf(&b, "if [ -e %s ] || [ -L %s ]; then val 1; else no; fi\n", p, p)
		case q.op == "realpath":
			fmt.Fprintf(&b, "if [ -e %s ]; then val \"$(readlink -f %s)\"; else no; fi\n", p, p)
		case q.op == "firstline":
			fmt.Fprintf(&b, "if [ -r %s ] && [ -f %s ]; then val \"$(head -c 256 %s | head -n 1 | tr -d '\\000')\"; else no; fi\n", p, p, p)
		case q.op == "lookpath":
			fmt.Fprintf(&b, "if c=$(command -v %s); then val \"$c\"; else no; fi\n", p)
		case strings.HasPrefix(q.op, "mkdir"):
			fmt.Fprintf(&b, "if mkdir -p %s && chmod %s %s; then val 1; else no; fi\n", p, strings.TrimPrefix(q.op, "mkdir"), p)
		case q.op == "readdir":
			fmt.Fprintf(&b, "if [ -d %s ]; then val .; for f in %s/* %s/.[!.]* %s/..?*; do { [ -e \"$f\" ] || [ -L \"$f\" ]; } && val \"${f##*/}\"; done; else no; fi\n", p, p, p, p)
		case q.op == "bwrap":
			// bubblewrap making its namespaces there, as the remote account.
			b.WriteString("if o=$(bwrap --ro-bind / / --unshare-pid --proc /proc --dev /dev true 2>&1); then val 1; else val \"$o\"; no; fi\n")
		case q.op == "touch":
			fmt.Fprintf(&b, "if [ -e %s ] || : > %s; then val 1; else no; fi\n", p, p)
		case q.op == "readfile":
			fmt.Fprintf(&b, "if [ -f %s ]; then val \"$(tr -d '\\000' < %s)\"; else no; fi\n", p, p)
		case q.op == "env":
			fmt.Fprintf(&b, "eval \"v=\\${%s-}\"; val \"$v\"\n", shellName(q.path))
		default:
			b.WriteString("no\n")
		}
	}
	b.WriteString("exit 0\n")
	return b.String()
}

// shellName keeps a variable name to what a shell name may hold.
func shellName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// parseProbe reads probeScript's output into one answer per question.
func parseProbe(out string, n int) ([]probeA, error) {
	toks := strings.Split(out, "\x00")
	var as []probeA
	for _, t := range toks {
		switch {
		case t == "@":
			as = append(as, probeA{ok: true})
		case len(as) == 0:
			if t != "" {
				return nil, fmt.Errorf("probe: stray output %q", t)
			}
		case t == "!":
			as[len(as)-1].ok = false
		case strings.HasPrefix(t, "="):
			a := &as[len(as)-1]
			a.fields = append(a.fields, t[1:])
		}
	}
	if len(as) != n {
		return nil, fmt.Errorf("probe: %d answers to %d questions", len(as), n)
	}
	return as, nil
}

// answer runs one round: every question asked since the last one is
// answered on the host, in the order asked (a mkdir before the readdir
// of the same directory).
func (f *probeFS) answer(ctx context.Context, run func(context.Context, string) (string, error)) error {
	qs := f.asked
	f.asked = nil
	out, err := run(ctx, probeScript(qs))
	if err != nil {
		return err
	}
	as, err := parseProbe(out, len(qs))
	if err != nil {
		return err
	}
	for i, q := range qs {
		a := as[i]
		if q.op == "readdir" && a.ok && len(a.fields) > 0 {
			a.fields = a.fields[1:] // the "." that marks a directory read
			slices.Sort(a.fields)   // as os.ReadDir gives them
		}
		f.answers[q] = a
	}
	return nil
}

// settle runs build until it asks nothing the host has not answered,
// answering between runs; build's result is the last run's.
func (f *probeFS) settle(ctx context.Context, run func(context.Context, string) (string, error), build func() error) error {
	for range 8 {
		err := build()
		if !f.pending() {
			return err
		}
		if err := f.answer(ctx, run); err != nil {
			return err
		}
	}
	return errors.New("probe: the host's answers did not settle")
}
