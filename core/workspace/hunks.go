package workspace

import (
	"strconv"
	"strings"
)

// HunkLine is one line of a hunk: Kind is ' ' (context), '+' or '-'; New
// is its line number in the new file (0 for a deleted line).
type HunkLine struct {
	Kind byte
	New  int
	Text string
}

// Hunk is one @@ section of a file's patch.
type Hunk struct {
	Header string
	Lines  []HunkLine
}

// ParsePatch reads a unified git patch into each file's hunks, keyed by
// the file's new path (deleted files have no new side and are left out).
// known lists the diff's paths: a +++ path is matched against them with
// and without git's one-letter prefix (b/, or w/ and i/ under
// diff.mnemonicPrefix), so a directory named like a prefix is not cut.
func ParsePatch(patch string, known []string) map[string][]Hunk {
	isKnown := make(map[string]bool, len(known))
	for _, k := range known {
		isKnown[k] = true
	}
	out := map[string][]Hunk{}
	var (
		file     string
		cur      *Hunk
		newLine  int
		inHeader bool
	)
	flush := func() {
		if cur != nil && file != "" {
			out[file] = append(out[file], *cur)
		}
		cur = nil
	}
	for _, line := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(line, "diff --git "):
			flush()
			file, inHeader = "", true
			continue
		case inHeader && strings.HasPrefix(line, "+++ "):
			file = patchPath(strings.TrimPrefix(line, "+++ "), isKnown)
			continue
		case inHeader && !strings.HasPrefix(line, "@@"):
			continue // index, ---, mode lines
		case strings.HasPrefix(line, "@@"):
			flush()
			inHeader = false
			start, ok := newStart(line)
			if !ok {
				file = "" // not a hunk git writes: skip to the next file
				continue
			}
			cur, newLine = &Hunk{Header: line}, start
			continue
		}
		if cur == nil || line == "" {
			continue
		}
		switch line[0] {
		case ' ', '+':
			cur.Lines = append(cur.Lines, HunkLine{Kind: line[0], New: newLine, Text: line[1:]})
			newLine++
		case '-':
			cur.Lines = append(cur.Lines, HunkLine{Kind: '-', Text: line[1:]})
		}
		// "\ No newline at end of file" and anything else: not a line.
	}
	flush()
	return out
}

// patchPath is a +++ line's path: unquoted, without its prefix.
func patchPath(p string, known map[string]bool) string {
	p = strings.TrimSuffix(p, "\t")
	if p == "/dev/null" {
		return ""
	}
	if strings.HasPrefix(p, `"`) {
		if u, err := strconv.Unquote(p); err == nil {
			p = u
		}
	}
	if len(p) > 2 && p[1] == '/' && known[p[2:]] {
		return p[2:]
	}
	if known[p] || len(p) <= 2 || p[1] != '/' {
		return p
	}
	return p[2:]
}

// newStart reads the new side's first line from "@@ -a,b +c,d @@".
func newStart(h string) (int, bool) {
	i := strings.Index(h, " +")
	if i < 0 {
		return 0, false
	}
	rest := h[i+2:]
	if j := strings.IndexAny(rest, ", "); j >= 0 {
		rest = rest[:j]
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}
