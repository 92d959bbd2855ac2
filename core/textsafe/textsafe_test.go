package textsafe

import (
	"bytes"
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text\nline two\ttab", "plain text\nline two\ttab"},
		{"\x1b[1;31mred\x1b[0m", "red"},
		{"clear\x1b[2J\x1b[Hscreen", "clearscreen"},
		{"\x1b]0;window title\x07after", "after"},
		{"x\x1b]52;c;aGk=\x07", "x"},
		{"x\x1b]52;c;aGk=\x1b\\y", "xy"},
		{"\x1b]8;;https://x.test\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1bPdcs payload\x1b\\after", "after"},
		{"progress 10%\rprogress 100%", "progress 10%progress 100%"},
		{"bell\x07 back\x08space nul\x00 del\x7f", "bell backspace nul del"},
		// C1 controls written as UTF-8 (U+0080..U+009F, two bytes each):
		// CSI, OSC, ST, NEL, and the ends of the range.
		{"c1 \u009b31mred", "c1 31mred"},
		{"osc \u009d52;c;aGk=\u009c!", "osc 52;c;aGk=!"},
		{"\u0080a\u0085b\u009fc", "abc"},
		// Raw C1 bytes are invalid UTF-8 and become U+FFFD, never a control.
		{"raw \x9b31m \x9d0;t\x07", "raw \ufffd31m \ufffd0;t"},
		{"bad \xff utf8 \xc3", "bad \ufffd utf8 \ufffd"},
		{"bidi \u202eevil\u202c ok", "bidi evil ok"},
		{"日本語 and émoji 🎉", "日本語 and émoji 🎉"},
	} {
		got := Clean(c.in)
		if got != c.want {
			t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.ContainsAny(got, "\x1b\x07\r\x00") || strings.ContainsFunc(got, func(r rune) bool { return r >= 0x80 && r < 0xa0 }) {
			t.Errorf("Clean(%q) = %q still holds a control", c.in, got)
		}
	}
}

func TestLine(t *testing.T) {
	if got, want := Line("a\n\nb\tc \x1b[2Jd"), "a b c d"; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
	if got := Line("plain title"); got != "plain title" {
		t.Errorf("Line(plain) = %q", got)
	}
}

// TestWriterSplitWrites: output cut at any byte between writes (as a
// bufio.Writer does) carries no escape and keeps every valid character.
func TestWriterSplitWrites(t *testing.T) {
	in := "title 日本語 🎉 x\x1b]52;c;aGk=\x07 \u009b2J end\n"
	for cut := 0; cut <= len(in); cut++ {
		var out bytes.Buffer
		w := NewWriter(&out)
		for _, part := range []string{in[:cut], in[cut:]} {
			n, err := w.Write([]byte(part))
			if err != nil || n != len(part) {
				t.Fatalf("cut %d: Write = %d, %v", cut, n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if strings.ContainsAny(got, "\x1b\x07") || strings.Contains(got, "\u009b") {
			t.Errorf("cut %d: %q holds a control", cut, got)
		}
		if strings.ContainsRune(got, '\uFFFD') {
			t.Errorf("cut %d: %q split a character", cut, got)
		}
		for _, keep := range []string{"title ", "日本語", "🎉", "end\n"} {
			if !strings.Contains(got, keep) {
				t.Errorf("cut %d: %q lost %q", cut, got, keep)
			}
		}
	}
}

func TestWriterFlushesUnfinishedCharacter(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	_, _ = w.Write([]byte("ab\xe6\x97"))
	if got := out.String(); got != "ab" {
		t.Fatalf("before flush: %q", got)
	}
	_ = w.Flush()
	if got := out.String(); got != "ab\ufffd" {
		t.Fatalf("after flush: %q", got)
	}
}
