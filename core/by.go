package core

// By names who created, wrote, sent or stalled something: a task's
// creator, a message's author, a queued item's sender, the role a stall
// came from, who set a budget. Most are a Ref; three are not: kandev
// itself (its own notes and notices), the external MCP surface, and the
// config file (an autopilot budget). It is parsed once, at
// the store's boundary (ParseBy), and decisions ask its methods (those of
// its Ref among them: IsOperator, IsPerson, IsTask...), never its text.
//
// Its JSON is the stored form, a string ("person:alice", "kandev",
// "external", ""), as the wire has always carried these fields; a Ref's
// own JSON (an assignee's) stays an object.
type By struct {
	Ref
}

const (
	// ByKandev is the Kind of kandev itself as a writer: "kandev".
	ByKandev RefKind = "kandev"
	// ByExternal is the Kind of the external MCP surface: "external".
	ByExternal RefKind = "external"
	// ByConfig is the Kind of the config file as the setter of a
	// budget: "config".
	ByConfig RefKind = "config"
)

// ByRef is r as a By.
func ByRef(r Ref) By { return By{Ref: r} }

// Kandev is kandev itself as a writer.
func Kandev() By { return By{Ref{Kind: ByKandev}} }

// ParseBy reads the stored form: a Ref, "kandev", "external", "config" or "" (no
// one: a stall from an unassigned task). Anything else is malformed and
// reads as a By that keeps the text as it is (String gives it back, so the
// wire shows what was stored) and matches no kind: it is nobody to
// decide on (Malformed reports it). A bad row never stops a read.
func ParseBy(s string) By {
	switch RefKind(s) {
	case ByKandev, ByExternal, ByConfig:
		return By{Ref{Kind: RefKind(s)}}
	}
	if r, ok := ParseRef(s); ok {
		return By{r}
	}
	return By{Ref{Name: s}}
}

// Malformed reports whether b was read from a stored text that names
// nobody ParseBy knows.
func (b By) Malformed() bool { return b.Kind == "" && b.Name != "" }

// IsKandev reports whether kandev itself wrote it.
func (b By) IsKandev() bool { return b.Kind == ByKandev }

// IsExternal reports whether the external MCP surface wrote it.
func (b By) IsExternal() bool { return b.Kind == ByExternal }

// AsRef is the Ref b names, if it names one.
func (b By) AsRef() (Ref, bool) {
	switch b.Kind {
	case RefRole, RefPerson, RefTask:
		return b.Ref, true
	}
	return Ref{}, false
}

// String is the stored form, which ParseBy reads back.
func (b By) String() string {
	switch b.Kind {
	case "":
		return b.Name
	case ByKandev, ByExternal, ByConfig:
		return string(b.Kind)
	}
	return b.Ref.String()
}

// Label names the writer as both front ends show it (AuthorLabel).
func (b By) Label() string { return AuthorLabel(b.String()) }

// Describe is "kind name" for a Ref, as sentences name one, and the
// stored form otherwise.
func (b By) Describe() string {
	if r, ok := b.AsRef(); ok {
		return r.Describe()
	}
	return b.String()
}

// MarshalText writes the stored form.
func (b By) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText reads the stored form; it never fails (see ParseBy).
func (b *By) UnmarshalText(text []byte) error {
	*b = ParseBy(string(text))
	return nil
}
