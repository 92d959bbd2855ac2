package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// jsonRule is how every command writes --json, one rule in one place (as
// gh does): a value is indented for a person when stdout is a terminal and
// compact, on one line, when it goes to a pipe or a file, where a program
// reads it and the bytes are what the daemon or json.Marshal produce. A
// stream of values (kandev events, task log) is one compact value per
// line either way. docs/cli.md states it from here.
const jsonRule = "`--json` prints one JSON value: indented when stdout is a terminal, compact on one\n" +
	"line when it is a pipe or a file (`task list` and `task show` then print the daemon's\n" +
	"bytes as they come).\n" +
	"A stream (`kandev events --json`, `kandev task log --json`) prints one compact value per\n" +
	"line either way."

// printJSON writes v to stdout by the --json rule.
func (f *Factory) printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode --json output: %w", err)
	}
	return f.writeJSON(b)
}

// writeJSON writes one JSON value that is already encoded (compact) by
// the --json rule.
func (f *Factory) writeJSON(b []byte) error {
	b = bytes.TrimRight(b, "\n")
	if f.IO.OutTTY {
		var ind bytes.Buffer
		if err := json.Indent(&ind, b, "", "  "); err != nil {
			return fmt.Errorf("indent --json output: %w", err)
		}
		b = ind.Bytes()
	}
	_, err := f.IO.Out.Write(append(b, '\n'))
	return err
}

// copyJSON writes the JSON value r holds by the --json rule. To a pipe it
// is copied through untouched, so a large listing costs no decoding.
func (f *Factory) copyJSON(r func(io.Writer) error) error {
	if !f.IO.OutTTY {
		return r(f.IO.Out)
	}
	var buf bytes.Buffer
	if err := r(&buf); err != nil {
		return err
	}
	return f.writeJSON(buf.Bytes())
}

// printJSONLine writes v as one compact line: an element of a stream.
func (f *Factory) printJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode --json output: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
