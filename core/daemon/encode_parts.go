package daemon

import "github.com/kandev/kandev/core"

// The parts of a task appendTask (encode_task.go, generated) writes with
// encoders of their own: what its fields point to. Each writes what
// encoding/json would; a nil pointer is appendTask's (null, or left out).

func appendRef(b []byte, a *core.Ref) []byte {
	b = append(b, `{"kind":`...)
	b = appendString(b, string(a.Kind))
	b = append(b, `,"name":`...)
	b = appendString(b, a.Name)
	return append(b, '}')
}

func appendWorkspace(b []byte, w *core.Workspace) []byte {
	b = append(b, `{"mode":`...)
	b = appendString(b, w.Mode)
	b = append(b, `,"repo":`...)
	b = appendString(b, w.Repo)
	b = append(b, `,"dir":`...)
	b = appendString(b, w.Dir)
	b = append(b, `,"branch":`...)
	b = appendString(b, w.Branch)
	b = append(b, `,"base":`...)
	b = appendString(b, w.Base)
	if w.PullRequest != "" {
		b = append(b, `,"pull_request":`...)
		b = appendString(b, w.PullRequest)
	}
	return append(b, '}')
}

// appendStrings writes ids as a JSON array; nil is [] (a nil the wire
// shows as null is appendTask's to write).
func appendStrings(b []byte, ids []string) []byte {
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, id)
	}
	return append(b, ']')
}
