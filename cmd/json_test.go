package cmd

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestJSONRule: one value is indented on a terminal and compact on one line
// elsewhere, whether the command encodes it or copies the daemon's bytes;
// a stream's values are one compact line each either way.
func TestJSONRule(t *testing.T) {
	v := map[string]any{"id": "k3f9qa", "tags": []string{"a"}}
	raw := `{"id":"k3f9qa","tags":["a"]}` + "\n"
	indented := "{\n  \"id\": \"k3f9qa\",\n  \"tags\": [\n    \"a\"\n  ]\n}\n"
	for _, tc := range []struct {
		tty  bool
		want string
	}{{false, raw}, {true, indented}} {
		var out bytes.Buffer
		f := &Factory{IO: IOStreams{Out: &out, OutTTY: tc.tty}, JSON: true}
		if err := f.printJSON(v); err != nil {
			t.Fatal(err)
		}
		if err := f.copyJSON(func(w io.Writer) error { _, err := io.WriteString(w, raw); return err }); err != nil {
			t.Fatal(err)
		}
		if err := f.printJSONLine(&out, v); err != nil {
			t.Fatal(err)
		}
		if got, want := out.String(), tc.want+tc.want+raw; got != want {
			t.Errorf("terminal %v:\n got %q\nwant %q", tc.tty, got, want)
		}
	}
	// Piped, the daemon's bytes pass through as they are.
	var out bytes.Buffer
	f := &Factory{IO: IOStreams{Out: &out}}
	daemon := `[{"id":"a"},{"id":"b"}]` + "\n"
	_ = f.copyJSON(func(w io.Writer) error { _, err := io.WriteString(w, daemon); return err })
	if out.String() != daemon || strings.Contains(out.String(), "  ") {
		t.Errorf("piped copy changed the bytes: %q", out.String())
	}
}
