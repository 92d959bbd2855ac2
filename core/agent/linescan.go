package agent

// The guard reads every line the agent writes, and a streaming agent writes
// thousands a second: decoding each one (as it once did, and again for the
// params of every session/update) cost more than everything else the daemon
// does with a chunk (ADR 0059). scanEnvelope reads what the guard needs —
// the top-level method and whether an id is set — by walking the line's
// top-level keys and skipping their values, and says when it cannot be sure
// the SDK's decoding would agree; the guard then decodes the line as before.

// envelope is what the guard needs of a line: the SDK's anyMessage
// reduced to its classification.
type envelope struct {
	method string
	hasID  bool
}

// isNotification is true for what the SDK puts on its notification queue.
func (e envelope) isNotification() bool {
	return !e.hasID && e.method != "" && e.method != "$/cancel_request"
}

// scanEnvelope reads the top-level members of a line json.Valid accepted
// (surrounding whitespace trimmed). ok is false when encoding/json's view
// of the line into wireMessage could differ from the scan's or could fail:
// the top level is not an object, a key is escaped or not ASCII (JSON's
// case-insensitive key match folds some non-ASCII runes onto ASCII
// letters), the method is escaped or not a string, jsonrpc is not a string,
// or an error member is set (a response: its shape is decoded, and it is
// not worth a fast path). Keys match case-insensitively and the last of a
// repeated key wins, as in encoding/json.
func scanEnvelope(b []byte) (e envelope, ok bool) {
	if len(b) < 2 || b[0] != '{' {
		return envelope{}, false
	}
	i := skipSpace(b, 1)
	if b[i] == '}' {
		return envelope{}, true
	}
	for {
		// b[i] is the opening quote of a key.
		end, plain := scanString(b, i)
		key := b[i+1 : end]
		i = skipSpace(b, end+1) // b[i] is ':'
		i = skipSpace(b, i+1)
		vEnd := skipValue(b, i)
		v := b[i:vEnd]
		switch {
		case !plain:
			return envelope{}, false
		case asciiFold(key, "method"):
			if v[0] != '"' {
				return envelope{}, false
			}
			s, plain := scanString(b, i)
			if !plain {
				return envelope{}, false
			}
			e.method = string(b[i+1 : s])
		case asciiFold(key, "id"):
			e.hasID = !isNull(v)
		case asciiFold(key, "jsonrpc"):
			if v[0] != '"' && !isNull(v) {
				return envelope{}, false
			}
		case asciiFold(key, "error"):
			if !isNull(v) {
				return envelope{}, false
			}
		}
		i = skipSpace(b, vEnd)
		if b[i] == '}' {
			return e, true
		}
		i = skipSpace(b, i+1) // past ','
	}
}

// scanString returns the index of the closing quote of the string opening
// at b[i], and whether its content is plain: printable ASCII with no escape.
func scanString(b []byte, i int) (end int, plain bool) {
	plain = true
	for j := i + 1; ; j++ {
		switch c := b[j]; {
		case c == '"':
			return j, plain
		case c == '\\':
			plain = false
			j++ // the escaped byte; \uXXXX's digits are plain bytes
		case c >= 0x80:
			plain = false
		}
	}
}

// skipValue returns the index just past the value starting at b[i], in
// JSON already known to be valid.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		end, _ := scanString(b, i)
		return end + 1
	case '{', '[':
		depth := 0
		for j := i; ; j++ {
			switch b[j] {
			case '"':
				j, _ = scanString(b, j)
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
	default: // number, true, false, null
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j
			}
			j++
		}
		return j
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func isNull(v []byte) bool { return string(v) == "null" }

// asciiFold compares an ASCII key with an ASCII name, ignoring case,
// which for ASCII is encoding/json's key match.
func asciiFold(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := range key {
		if lowerASCII(key[i]) != lowerASCII(name[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
