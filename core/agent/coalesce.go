package agent

import (
	"bytes"
	"unicode/utf8"
)

// An agent streaming faster than the daemon reads (a burst of chunks, a
// daemon behind on a loaded machine) leaves many chunk notifications
// waiting in the guard's buffer. The SDK decodes each of them twice over
// and the engine takes each in turn, only to join their texts (ADR 0050);
// the guard hands such a run of lines on as one notification instead,
// whose text is theirs joined (ADR 0059), waiting up to joinWait for more
// of them (ADR 0063).

// maxCoalesced bounds a joined line's text, far below MaxLine.
const maxCoalesced = 256 << 10

// textSpan locates the text of a streamed text chunk in a session/update
// line (trimmed, valid JSON): params.update.content.text, where update is
// an agent or thought chunk and content a text block. ok is false for any
// other line, and for any line where encoding/json might read the path
// differently: an escaped, non-ASCII, re-cased or repeated key on the path,
// or a text whose join with another could decode to something else than
// the two decoded apart (an escaped surrogate, which may pair across the
// join, or invalid UTF-8, which may complete a rune).
func textSpan(b []byte) (start, end int, ok bool) {
	v, ok := member(b, 0, "params")
	if !ok {
		return 0, 0, false
	}
	upd, ok := member(b, v, "update")
	if !ok {
		return 0, 0, false
	}
	kind, ok := member(b, upd, "sessionUpdate")
	if !ok {
		return 0, 0, false
	}
	switch k := b[kind:skipValue(b, kind)]; string(k) {
	case `"agent_message_chunk"`, `"agent_thought_chunk"`:
	default:
		return 0, 0, false
	}
	content, ok := member(b, upd, "content")
	if !ok {
		return 0, 0, false
	}
	typ, ok := member(b, content, "type")
	if !ok || string(b[typ:skipValue(b, typ)]) != `"text"` {
		return 0, 0, false
	}
	text, ok := member(b, content, "text")
	if !ok || b[text] != '"' {
		return 0, 0, false
	}
	end, _ = scanString(b, text)
	if !joinable(b[text+1 : end]) {
		return 0, 0, false
	}
	return text + 1, end, true
}

// joinable: a text (a JSON string's body) whose join with another decodes
// to the two decoded apart: no escaped surrogate, which may pair across
// the join, and no invalid UTF-8, which may complete a rune.
func joinable(body []byte) bool {
	return utf8.Valid(body) && !bytes.Contains(body, []byte(`\ud`)) && !bytes.Contains(body, []byte(`\uD`))
}

// stringBody reports whether b may stand between a JSON string's quotes:
// no quote or control byte unescaped, every escape one JSON has.
func stringBody(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"' || c < 0x20:
			return false
		case c == '\\':
			i++
			if i == len(b) {
				return false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return false
				}
				i += 4
			default:
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// member returns where the value of key name starts in the object at
// b[i], requiring every key of the object to be plain ASCII and no other
// key to match name as encoding/json matches keys (ignoring ASCII case).
// ok is false when the value is not an object's member or any of that
// does not hold.
func member(b []byte, i int, name string) (int, bool) {
	if b[i] != '{' {
		return 0, false
	}
	found := -1
	i = skipSpace(b, i+1)
	if b[i] == '}' {
		return 0, false
	}
	for {
		end, plain := scanString(b, i)
		if !plain {
			return 0, false
		}
		key := b[i+1 : end]
		i = skipSpace(b, end+1)
		i = skipSpace(b, i+1)
		if asciiFold(key, name) {
			if found >= 0 || string(key) != name {
				return 0, false
			}
			found = i
		}
		i = skipSpace(b, skipValue(b, i))
		if b[i] == '}' {
			return found, found >= 0
		}
		i = skipSpace(b, i+1)
	}
}

// coalescer joins the texts of chunk lines that are the same but for
// their text. It owns its bytes: the lines it is given are the guard's
// buffers, overwritten by the next read.
type coalescer struct {
	// line is the joined line being built, up to the end of the texts
	// joined so far: the first line's bytes before its text, then the
	// texts. prefix is that first part's length; suffix is the first
	// line's bytes after its text.
	line   []byte
	prefix int
	suffix []byte
	n      int
}

// start begins a join with a chunk line (trimmed); false if it is not one.
func (c *coalescer) start(b []byte) bool {
	s, e, ok := textSpan(b)
	if !ok {
		return false
	}
	c.line = append(c.line[:0], b[:e]...)
	c.prefix = s
	c.suffix = append(c.suffix[:0], b[e:]...)
	c.n = 1
	return true
}

// add joins the next line (trimmed) if it is a chunk line of the same
// entry and kind as the first, with nothing else different, and the join
// stays under maxCoalesced. The first line is valid JSON whose text spans
// [prefix, len-len(suffix)); a line that is the same but for a text that
// is a valid string body is then valid JSON with its text at the same
// place, so only the text is checked (json.Valid and textSpan again cost a
// tenth of the daemon's CPU at fifty streaming agents).
func (c *coalescer) add(b []byte) bool {
	if len(b) < c.prefix+len(c.suffix) || len(c.line)-c.prefix+len(b) > maxCoalesced ||
		!bytes.Equal(b[:c.prefix], c.line[:c.prefix]) || !bytes.HasSuffix(b, c.suffix) {
		return false
	}
	text := b[c.prefix : len(b)-len(c.suffix)]
	if !stringBody(text) || !joinable(text) {
		return false
	}
	c.line = append(c.line, text...)
	c.n++
	return true
}

// finish returns the joined line, newline included.
func (c *coalescer) finish() []byte {
	c.line = append(c.line, c.suffix...)
	return append(c.line, '\n')
}
