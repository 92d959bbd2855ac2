package engine

import (
	"fmt"
	"unicode/utf8"

	"github.com/kandev/kandev/core"
)

// checkTitle refuses a title that is not one line: a title is shown on one
// tree row and in one-line listings, so a line break in it is a mistake of
// the caller, answered as such with what to fix. NUL is refused too: it is
// never text, and SQLite's length() stops at it, so the store's own check
// would refuse a NUL-led title as a constraint CONFLICT instead. Other
// control characters are kept as given and made harmless where shown
// (core/textsafe).
func checkTitle(title string) error {
	if !utf8.ValidString(title) {
		return core.Errorf(core.CodeValidation, "title is not valid UTF-8")
	}
	for i, r := range title {
		switch r {
		case 0, '\n', '\r', '\v', '\f', 0x85, 0x2028, 0x2029:
			return core.Errorf(core.CodeValidation, "title must be one line of text: it has %s at byte %d; put details in the description", controlName(r), i)
		}
	}
	return nil
}

func controlName(r rune) string {
	switch r {
	case '\n':
		return "a newline"
	case '\r':
		return "a carriage return"
	case 0:
		return "a NUL byte"
	}
	return fmt.Sprintf("a line break (U+%04X)", r)
}
