package mockagent

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// directivePrefix marks a prompt line as an instruction to the mock agent.
// Everything else is ignored, since kandev wraps prompts in its own text.
const directivePrefix = "mock:"

// The patterns compile on first use, not in the package's init: every
// kandev process links this package, and only the mock agent matches.
var (
	// varRE matches "key: value" lines; kandev writes ids this way in the
	// prompts it generates (question_id: q1, child_task_id: abc).
	varRE = lazyRE(`^\s*([a-z_]+):\s*(\S.*)$`)
	// refRE matches ${key} references inside directive arguments.
	refRE = lazyRE(`\$\{([A-Za-z0-9_]+)\}`)
	// leadingTagRE matches one [kandev:KIND] tag at the start of a line.
	leadingTagRE = lazyRE(`^\[kandev:[^\]\s]+\]\s*`)
	// kindRE limits reaction kinds to what can appear in a tag.
	kindRE = lazyRE(`^[A-Za-z0-9_.-]+$`)
)

func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// script is a prompt as the interpreter sees it.
type script struct {
	text       string
	directives []string // the text after "mock:", trimmed, in order
	vars       map[string]string
	first      string // first non-empty line, leading [kandev:KIND] tags removed
}

func parseScript(text string) script {
	s := script{text: text, vars: map[string]string{}}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		trimmed := strings.TrimSpace(line)
		if s.first == "" {
			s.first = stripTags(trimmed)
		}
		if d, ok := strings.CutPrefix(trimmed, directivePrefix); ok {
			s.directives = append(s.directives, strings.TrimSpace(d))
			continue
		}
		if m := varRE().FindStringSubmatch(line); m != nil && m[1] != "mock" {
			s.vars[m[1]] = strings.TrimSpace(m[2])
		}
	}
	return s
}

// stripTags removes the [kandev:KIND] tags kandev puts at the start of its
// prompts; a line that is only tags becomes empty.
func stripTags(line string) string {
	for {
		loc := leadingTagRE().FindStringIndex(line)
		if loc == nil {
			return strings.TrimSpace(line)
		}
		line = line[loc[1]:]
	}
}

// hasTag reports whether the prompt carries [kandev:KIND] anywhere.
func hasTag(text, kind string) bool {
	return strings.Contains(text, "[kandev:"+kind+"]")
}

// expand replaces ${key} with its value; unknown keys stay as written so a
// typo is visible in the output instead of silently becoming empty.
func expand(s string, vars map[string]string) string {
	return refRE().ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := vars[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

// splitVerb splits "verb rest of line" at the first run of white space.
func splitVerb(d string) (verb, rest string) {
	i := strings.IndexFunc(d, unicode.IsSpace)
	if i < 0 {
		return d, ""
	}
	return d[:i], strings.TrimSpace(d[i:])
}

// parseReaction splits the argument of `on`: "KIND: DIRECTIVE". The
// directive may repeat the "mock:" prefix.
func parseReaction(arg string) (reaction, bool) {
	kind, directive, ok := strings.Cut(arg, ":")
	kind = strings.TrimSpace(kind)
	directive = strings.TrimSpace(directive)
	directive = strings.TrimSpace(strings.TrimPrefix(directive, directivePrefix))
	if !ok || !kindRE().MatchString(kind) || directive == "" {
		return reaction{}, false
	}
	return reaction{Kind: kind, Directive: directive}, true
}

// truncateRunes cuts s to at most n runes.
func truncateRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
